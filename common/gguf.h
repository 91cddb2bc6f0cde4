/* Reading GGUF files (llama.cpp's format), versions 2 and 3: a header,
 * metadata key/value pairs, tensor infos, then the tensors' bytes from an
 * aligned data section. The file is mapped read-only; values, strings and
 * tensor bytes are read in place, never copied.
 *
 * Contract:
 * - gguf_open checks the whole header before it returns: magic, version
 *   (1 and big-endian files refused by name), every key/value pair (value
 *   types 0..12, arrays of any of them, arrays nested up to
 *   GGUF_MAX_ARRAY_DEPTH deep, bools 0 or 1, keys unique, non-empty and
 *   free of NUL bytes), general.alignment (a uint32, a nonzero power of
 *   two; 32 when absent), every tensor info (name unique, under
 *   GGUF_MAX_NAME bytes; 1..4 dims, each nonzero, their product not
 *   overflowing; offset a multiple of the alignment) and the data section
 *   (its start inside the file when there are tensors).
 * - Tensors whose ggml type code has a row in common/wtypes.def (see
 *   wtype_from_code) are checked fully at open: a row length (dims[0])
 *   that is a whole number of the type's blocks, bytes inside the file.
 *   A tensor of any other code is not refused at open (its metadata and
 *   the other tensors still read): it is taken to hold at least one byte
 *   at its offset, and gguf_tensor_get refuses it by name and type.
 *   No two tensors' byte ranges overlap.
 * - Counts and lengths read from the file (keys, tensors, array elements,
 *   string bytes) are compared with what the rest of the file could hold
 *   before anything is allocated: what gguf_open allocates is bounded by
 *   a small multiple of the file's size.
 * - Every refusal is -1 with one line in err naming the file and the key
 *   or tensor (or the header field) and what is wrong; nothing is left
 *   open or allocated after a refusal.
 * - A gguf_file is read-only after gguf_open: any number of threads may
 *   read it at once. */
#ifndef FLASHBED_COMMON_GGUF_H
#define FLASHBED_COMMON_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wtype.h"

#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 64       /* ggml's GGML_MAX_NAME: a tensor name is shorter */
#define GGUF_MAX_ARRAY_DEPTH 4 /* an array of arrays of ... at most this deep */
#define GGUF_DEFAULT_ALIGNMENT 32

/* The metadata value types, numbered as in the file. */
enum gguf_vtype {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
};
enum { GGUF_TYPE_COUNT = 13 };

/* One value, pointing into the mapped file. */
struct gguf_value {
    enum gguf_vtype type;
    const unsigned char *data; /* scalar: its bytes (little-endian); string: its bytes; array: its first element */
    uint64_t bytes;            /* string: its length; array: its elements' encoded bytes; scalar: its size */
    enum gguf_vtype elem_type; /* arrays only */
    uint64_t count;            /* arrays only: the number of elements */
};

struct gguf_kv {
    const char *key; /* NUL-terminated (a copy: the file's keys are not) */
    uint64_t key_len;
    struct gguf_value value;
};

struct gguf_tensor {
    char name[GGUF_MAX_NAME];
    uint32_t n_dims;
    uint64_t dims[GGUF_MAX_DIMS]; /* ggml's order: dims[0] is the row (contiguous); unused ones 1 */
    uint32_t type_code;           /* ggml's type number */
    uint64_t offset;              /* from the data section's start */
    uint64_t elems;               /* the product of dims */
    bool known;                   /* type_code has a row in common/wtypes.def */
    enum fb_dtype type;           /* when known */
    uint64_t bytes;               /* when known: wtype_row_bytes(type, elems); else 0 */
};

struct gguf_file {
    char path[4200];
    const unsigned char *map;
    size_t size;
    uint32_t version;
    uint64_t n_kv, n_tensors;
    struct gguf_kv *kv;          /* in file order */
    struct gguf_tensor *tensors; /* in file order */
    uint64_t alignment;
    uint64_t data_start; /* aligned end of the tensor infos */
    char *keys;          /* the keys' NUL-terminated copies, one block */
};

/* Opens and checks path (the contract above). 0, or -1 with the reason in
 * err (*f left empty: gguf_close on it is harmless). */
int gguf_open(struct gguf_file *f, const char *path, char *err, size_t errlen);
void gguf_close(struct gguf_file *f);

/* "uint32", "string", "array": a value type's name; "?" outside 0..12. */
const char *gguf_vtype_name(uint32_t t);
/* ggml's name of a tensor type code ("Q4_1", "IQ2_XS", "MXFP4"); NULL for
 * a code ggml never defined. */
const char *gguf_ggml_type_name(uint32_t code);

/* ---- metadata ---- */

/* The pair called key, or NULL. */
const struct gguf_kv *gguf_find(const struct gguf_file *f, const char *key);

/* key's value read as the type named. Integers: any integer type whose
 * value fits (a uint8 block_count reads as a u32 as well as a uint64 one
 * does); f32: a float32, or a float64 inside float32's range (rounded;
 * NaN and infinities as they are); bool: a bool; string: its
 * bytes and length (not NUL-terminated: in the file). -1 with err naming
 * the file and key when it is missing, of another type or out of range. */
int gguf_get_u32(const struct gguf_file *f, const char *key, uint32_t *out, char *err, size_t errlen);
int gguf_get_i32(const struct gguf_file *f, const char *key, int32_t *out, char *err, size_t errlen);
int gguf_get_u64(const struct gguf_file *f, const char *key, uint64_t *out, char *err, size_t errlen);
int gguf_get_f32(const struct gguf_file *f, const char *key, float *out, char *err, size_t errlen);
int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out, char *err, size_t errlen);
int gguf_get_str(const struct gguf_file *f, const char *key, const char **s, size_t *len, char *err, size_t errlen);
/* key's value as an array whose elements are of type elem (GGUF_TYPE_COUNT:
 * any). -1 with err naming the key when missing, not an array, or of
 * other elements. */
int gguf_get_array(const struct gguf_file *f, const char *key, uint32_t elem, struct gguf_value *out, char *err,
                   size_t errlen);

/* Whether a string value's bytes are exactly s. */
bool gguf_str_eq(const struct gguf_value *v, const char *s);

/* Element i (< count) of an array of fixed-size elements, read in place:
 * _uint for UINT8..UINT64 and BOOL, _int for INT8..INT64, _float for
 * FLOAT32 and FLOAT64. 0 for another element type or i past the end. */
uint64_t gguf_elem_uint(const struct gguf_value *a, uint64_t i);
int64_t gguf_elem_int(const struct gguf_value *a, uint64_t i);
double gguf_elem_float(const struct gguf_value *a, uint64_t i);

/* Walks an array's elements in order, whatever their type (strings and
 * nested arrays included, which have no fixed size): each as a value. */
struct gguf_cursor {
    const unsigned char *at;
    uint64_t left;
    enum gguf_vtype type;
};
void gguf_cursor_init(struct gguf_cursor *c, const struct gguf_value *array);
/* 1 with the next element in *v, or 0 past the last. */
int gguf_cursor_next(struct gguf_cursor *c, struct gguf_value *v);

/* ---- tensors ---- */

/* The tensor called name, or NULL (whatever its type). */
const struct gguf_tensor *gguf_tensor_find(const struct gguf_file *f, const char *name);
/* The tensor called name, of a type flashbed reads, and its bytes in the
 * map (t->bytes of them). -1 with err naming the file and the tensor when
 * it is missing or of another type ("tensor blk.0.ffn_up.weight has type
 * Q4_1 (code 3), which flashbed does not read"). data may be NULL. */
int gguf_tensor_get(const struct gguf_file *f, const char *name, const struct gguf_tensor **t, const void **data,
                    char *err, size_t errlen);
/* A tensor's bytes in the map (any type: its offset there). */
const void *gguf_tensor_data(const struct gguf_file *f, const struct gguf_tensor *t);

#endif
