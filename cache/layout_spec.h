/* A flash layout as a value: which layout (its ops table, whose properties
 * are all a caller may ask of it: cache/layout.h) and its argument. Text
 * becomes a layout once, at the edge (the command line, configuration
 * files), through cache_layout_parse (cache_layout_parse_list for replay's
 * lists); the mode table (cache/mode.h) gives values. Below the edge the
 * value travels in the configuration structs and no one parses a name
 * again. cache_layout_name writes a value back into its name, the one
 * spelling every result file and message uses.
 *
 * A zeroed value (ops NULL) is no layout. Plain data: copy it freely;
 * thread-safe. */
#ifndef FLASHBED_CACHE_LAYOUT_SPEC_H
#define FLASHBED_CACHE_LAYOUT_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/layout.h"

struct layout_spec {
    const struct layout_ops *ops; /* NULL: no layout */
    uint64_t arg;                 /* coalesce:G's G, below UINT32_MAX; 0 without an argument */
};

/* The longest layout name cache_layout_name writes, its NUL included. */
#define LAYOUT_NAME_MAX 32

/* A layout without an argument, or coalesce:G: the value of ops and arg. */
static inline struct layout_spec layout_spec_of(const struct layout_ops *ops, uint64_t arg)
{
    struct layout_spec s = {ops, ops && ops->takes_arg ? arg : 0};
    return s;
}

/* Two values name the same layout. */
static inline bool layout_spec_equal(const struct layout_spec *a, const struct layout_spec *b)
{
    return a->ops == b->ops && a->arg == b->arg;
}

/* The one parser of a layout name: split, bundled, friends, coalesce:G (G
 * from 0 to UINT32_MAX - 1 unneeded rows a read spans). 0, or -1 with err
 * (the name, and what is available or wrong); *out is zeroed on failure. */
int cache_layout_parse(const char *text, struct layout_spec *out, char *err, size_t errlen);

/* A comma-separated list of layout names ("split,coalesce:2"), each as
 * cache_layout_parse reads it, into *out (malloc'd, *n of them; the caller
 * frees *out, on failure too). An empty element is the unknown layout ''.
 * 0, or -1 with err, the first bad element's refusal as cache_layout_parse
 * words it; on failure *out holds the *n elements before the bad one. */
int cache_layout_parse_list(const char *list, struct layout_spec **out, size_t *n, char *err, size_t errlen);

/* The name cache_layout_parse reads back: "bundled", "coalesce:2"; "" for
 * no layout. */
void cache_layout_name(const struct layout_spec *l, char *buf, size_t len);

#endif
