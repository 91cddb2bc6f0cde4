/* The kinds of caching unit by name and file code: what a trace header
 * (traces/, below the geometry) records of a unit. What each kind is made
 * of, and its geometry, is cache/unit_geometry.h's table.
 *
 * Contract:
 * - One row per kind in unit_kinds.def: its enum value (dense from 0), its
 *   name as results and refusals give it ("neuron bundle") and its code in
 *   files. Codes never change once written; a new kind takes a new code.
 * - Pure functions over the rows. */
#ifndef FLASHBED_COMMON_UNIT_KIND_H
#define FLASHBED_COMMON_UNIT_KIND_H

#include <stdint.h>

enum unit_kind {
#define UNIT_KIND(id, ...) UNIT_##id,
#include "common/unit_kinds.def"
#undef UNIT_KIND
};
/* The number of rows: apart from the enum, so an exhaustive switch needs
 * no case for it. */
enum { UNIT_KIND_COUNT = 0
#define UNIT_KIND(id, ...) +1
#include "common/unit_kinds.def"
#undef UNIT_KIND
};

/* "neuron bundle"; "?" outside the enum. */
const char *unit_kind_name(enum unit_kind k);

/* k's code in files; UINT32_MAX outside the enum. */
uint32_t unit_kind_code(enum unit_kind k);

/* The kind whose file code is `code` into *out; 0, or -1 when no row has it. */
int unit_kind_from_code(uint32_t code, enum unit_kind *out);

#endif
