#include "common/wtype.h"

#include <string.h>

static const struct wtype_traits table[DTYPE_COUNT] = {
#define WTYPE(id, name, long_name, upper, elems, bytes, quantized, code) \
    [DTYPE_##id] = {name, long_name, upper, elems, bytes, quantized, code},
#include "common/wtypes.def"
#undef WTYPE
};

/* ", f32, f16, bf16" from the same rows, at compile time. */
static const char names[] = ""
#define WTYPE(id, name, ...) ", " name
#include "common/wtypes.def"
#undef WTYPE
    ;

const struct wtype_traits *wtype_traits(enum fb_dtype t) { return wtype_valid(t) ? &table[t] : NULL; }

const char *wtype_name(enum fb_dtype t) { return wtype_valid(t) ? table[t].name : "?"; }

int wtype_parse(const char *s, enum fb_dtype *out)
{
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (!strcmp(s, table[t].name) || !strcmp(s, table[t].long_name) || !strcmp(s, table[t].upper_name)) {
            *out = (enum fb_dtype)t;
            return 0;
        }
    return -1;
}

int wtype_from_code(uint32_t code, enum fb_dtype *out)
{
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (table[t].code == code) {
            *out = (enum fb_dtype)t;
            return 0;
        }
    return -1;
}

const char *wtype_names(void) { return names + 2; }

/* "|f32|f16|bf16" the same way, from the float rows only (a command
 * writes weights in those; the block formats come as stored, from GGUF);
 * WTYPE_ALLOWED starts after the first bar. */
const char wtype_bars[] = ""
#define WTYPE(id, name, ...) "|" name
#define WTYPE_QUANT(...)
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
    ;
