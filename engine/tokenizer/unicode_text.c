/* Code-point classes by binary search over the generated ranges, and
 * UTF-8 read and written as llama.cpp's src/unicode.cpp does it
 * (engine/tokenizer/unicode_classes.h). */
#include "engine/tokenizer/unicode_classes.h"

enum unicode_class unicode_class_of(uint32_t cp)
{
    if (cp >= 0x110000)
        return UC_OTHER;
    size_t lo = 0, hi = unicode_class_range_count; /* the answer is in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (unicode_class_ranges[mid].start <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return (enum unicode_class)unicode_class_ranges[lo].cls;
}

int unicode_is_space(uint32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    for (size_t i = 0; i < unicode_white_space_count; i++)
        if (unicode_white_space[i] == cp)
            return 1;
    return 0;
}

static int is_continuation(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

/* The code point starting at u[i] and its length in bytes; 0 when llama.cpp
 * finds it invalid. */
static size_t decode_one(const unsigned char *u, size_t len, size_t i, uint32_t *cp)
{
    unsigned char b = u[i];
    size_t n;
    if (!(b & 0x80)) {
        *cp = b;
        return 1;
    }
    if (!(b & 0x40))
        return 0;
    if (!(b & 0x20)) {
        n = 2;
        *cp = b & 0x1Fu;
    } else if (!(b & 0x10)) {
        n = 3;
        *cp = b & 0x0Fu;
    } else if (!(b & 0x08)) {
        n = 4;
        *cp = b & 0x07u;
    } else
        return 0;
    if (i + n > len)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if (!is_continuation(u[i + k]))
            return 0;
        *cp = (*cp << 6) | (u[i + k] & 0x3Fu);
    }
    return n;
}

size_t unicode_decode_utf8(const char *text, size_t len, uint32_t *cps)
{
    const unsigned char *u = (const unsigned char *)text;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t step = decode_one(u, len, i, &cps[n]);
        if (step == 0) {
            cps[n] = UNICODE_REPLACEMENT;
            step = 1;
        }
        n++;
        i += step;
    }
    return n;
}

size_t unicode_encode_utf8(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp <= 0x7F) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp <= 0x7FF) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp <= 0xFFFF) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF)
        return unicode_encode_utf8(UNICODE_REPLACEMENT, out);
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}
