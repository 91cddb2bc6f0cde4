/* The unit kinds' names and file codes (unit_kind.h). */
#include "common/unit_kind.h"

static const struct {
    const char *name;
    uint32_t code;
} rows[UNIT_KIND_COUNT] = {
#define UNIT_KIND(id, name, code) [UNIT_##id] = {name, code},
#include "common/unit_kinds.def"
#undef UNIT_KIND
};

const char *unit_kind_name(enum unit_kind k)
{
    return (unsigned)k < UNIT_KIND_COUNT ? rows[k].name : "?";
}

uint32_t unit_kind_code(enum unit_kind k)
{
    return (unsigned)k < UNIT_KIND_COUNT ? rows[k].code : UINT32_MAX;
}

int unit_kind_from_code(uint32_t code, enum unit_kind *out)
{
    for (unsigned k = 0; k < UNIT_KIND_COUNT; k++)
        if (rows[k].code == code) {
            *out = (enum unit_kind)k;
            return 0;
        }
    return -1;
}
