/* Weight types: one table, the only place that knows how many bytes a
 * type's elements take (ggml's type traits are the model).
 *
 * Contract:
 * - A type stores its elements in blocks: `block_elems` elements in
 *   `block_bytes` bytes (f32: 1 in 4; a block format such as Q4_0: 32 in
 *   18). A row of n elements is n / block_elems blocks, so n must be a
 *   multiple of block_elems; its bytes come only from wtype_row_bytes.
 *   Nothing computes bytes as "element size × n": a block type has no
 *   element size.
 * - `code` is the type's number in files (trace headers, GGUF): ggml's
 *   type numbers, so a GGUF tensor's type maps to a row with no table of
 *   its own. Codes never change once written.
 * - The enum is dense from 0 to DTYPE_COUNT - 1; every switch over it is
 *   exhaustive with no default (the build has -Wswitch-enum), so a new
 *   row does not compile until each place that computes on a type has
 *   said what it does with it.
 * - The float types (WTYPE rows: f32, f16, bf16) come first, the block
 *   formats with scales (WTYPE_QUANT rows: ggml's q4_0 ... q6_k) after
 *   them: the first WTYPE_FLOAT_COUNT values are the float ones.
 *
 * Adding a type: one row in wtypes.def; then the
 * compiler lists the decode entries (the CPU's, and the device kernels'
 * in engine/compute/kernels/ops.kern) and every other switch to fill in.
 * A block format also takes its decode (engine/model/dtype_quant.h) and
 * its integer dot product (engine/compute/quant_dot.h). */
#ifndef FLASHBED_COMMON_WTYPE_H
#define FLASHBED_COMMON_WTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fb_dtype {
#define WTYPE(id, ...) DTYPE_##id,
#include "common/wtypes.def"
#undef WTYPE
};
/* The number of rows: apart from the enum, so an exhaustive switch needs
 * no case for it. */
enum { DTYPE_COUNT = 0
#define WTYPE(id, ...) +1
#include "common/wtypes.def"
#undef WTYPE
};

/* The float rows (the types a command writes and calibrate prices): the
 * first WTYPE_FLOAT_COUNT of the enum, the block formats after them. */
enum { WTYPE_FLOAT_COUNT = 0
#define WTYPE(id, ...) +1
#define WTYPE_QUANT(...)
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
};

struct wtype_traits {
    const char *name;       /* as written in model.json, options and results: "f16" */
    const char *long_name;  /* also accepted when parsing: "float16" */
    const char *upper_name; /* also accepted: safetensors' and GGUF's spelling, "F16" */
    uint32_t block_elems;   /* elements per block (1 for the float types) */
    uint32_t block_bytes;   /* bytes per block */
    bool quantized;         /* a block format with scales (not a float of its own) */
    uint32_t code;          /* the type's number in files: ggml's */
};

/* Each row's block as integer constants, WTYPE_BLOCK_ELEMS_F16 and
 * WTYPE_BLOCK_BYTES_F16: for compile-time checks of numbers kept outside
 * C (the device kernels' source). */
enum {
#define WTYPE(id, name, long_name, upper, elems, bytes, ...) \
    WTYPE_BLOCK_ELEMS_##id = (elems), WTYPE_BLOCK_BYTES_##id = (bytes),
#include "common/wtypes.def"
#undef WTYPE
};

/* t's row of the table; NULL for a value outside the enum. */
const struct wtype_traits *wtype_traits(enum fb_dtype t);

static inline bool wtype_valid(enum fb_dtype t) { return (unsigned)t < (unsigned)DTYPE_COUNT; }

/* t's block: its elements and its bytes (0 outside the enum). Inline, so
 * that where t is a constant (a kernel's copy per type) a row's bytes
 * are a constant too. */
static inline uint32_t wtype_block_elems(enum fb_dtype t)
{
    switch (t) {
#define WTYPE(id, name, long_name, upper, elems, ...) \
    case DTYPE_##id:                                  \
        return (elems);
#include "common/wtypes.def"
#undef WTYPE
    }
    return 0;
}

static inline uint32_t wtype_block_bytes(enum fb_dtype t)
{
    switch (t) {
#define WTYPE(id, name, long_name, upper, elems, bytes, ...) \
    case DTYPE_##id:                                         \
        return (bytes);
#include "common/wtypes.def"
#undef WTYPE
    }
    return 0;
}

/* "f16"; "?" for a value outside the enum. */
const char *wtype_name(enum fb_dtype t);

/* Whether n elements are a whole number of t's blocks. */
static inline bool wtype_row_fits(enum fb_dtype t, uint64_t n)
{
    return wtype_valid(t) && n % wtype_block_elems(t) == 0;
}

/* The bytes of n elements of type t: n / block_elems blocks. 0 when n is
 * not a whole number of blocks or t is outside the enum (a caller checks
 * wtype_row_fits where n comes from a file). */
static inline uint64_t wtype_row_bytes(enum fb_dtype t, uint64_t n)
{
    return wtype_row_fits(t, n) ? n / wtype_block_elems(t) * wtype_block_bytes(t) : 0;
}

/* A type's name in any spelling of its row ("f16", "float16", "F16") into
 * *out; 0, or -1 for any other text. */
int wtype_parse(const char *s, enum fb_dtype *out);

/* The row whose file code is `code` into *out; 0, or -1 when no row has it. */
int wtype_from_code(uint32_t code, enum fb_dtype *out);

/* "f32, f16, bf16, q4_0, ...": every type's name, for help texts and
 * refusals. */
const char *wtype_names(void);

/* "f32|f16|bf16": every float type's name (not the block formats: a
 * command writes weights in a float type) as an option's allowed values
 * (common/options.h's opt_def.allowed), built from the rows at compile
 * time: an address constant, so an option table can name it in its
 * initializer. wtype_bars is "|f32|f16|bf16". */
extern const char wtype_bars[];
#define WTYPE_ALLOWED (wtype_bars + 1)

#endif
