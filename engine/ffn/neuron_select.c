/* Choosing a layer's neurons (neuron_select.h): what every source shares;
 * each source's own choosing is its file, engine/ffn/source_<name>.c. */
#include "engine/ffn/neuron_select.h"

#include "engine/model/ffn_matrix.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/model/model_format.h"
#include "engine/model/model_integrity.h"

/* Bytes of one [n_layers][d_ff][d_model] matrix in the model's dtype. */
uint64_t neuron_select_matrix_bytes(const struct model *m)
{
    const struct model_shape *s = &m->shape;
    return (uint64_t)s->n_layers * s->d_ff * wtype_row_bytes(m->dtype, s->d_model);
}

int neuron_select_check(const struct model *m, const struct select_config *c, char *err, size_t errlen)
{
    const struct neuron_source_ops *o = select_source(c);
    return o->check ? o->check(m, c, err, errlen) : 0;
}

uint64_t neuron_select_bytes(const struct model *m, const struct select_config *c)
{
    const struct neuron_source_ops *o = select_source(c);
    return o->bytes ? o->bytes(m, c) : 0;
}

uint64_t neuron_select_madds(const struct model *m, const struct select_config *c)
{
    const struct neuron_source_ops *o = select_source(c);
    return o->madds ? o->madds(m, c) : 0;
}

/* Copies vector `vec` (0: up, 1: gate) of every bundle into dst
 * [n_layers][d_ff][d_model]: from the DRAM bundles (checked at load), or
 * from ffn.bin, each bundle checked against ffn.crc32c as it is read. */
static int gather_rows(const struct model *m, unsigned vec, uint8_t *dst, char *err, size_t errlen)
{
    const struct model_shape *s = &m->shape;
    uint64_t row = wtype_row_bytes(m->dtype, s->d_model);
    uint64_t skip = vec ? wtype_row_bytes(m->dtype, ffn_bundle_gate(s)) : 0;
    uint64_t n = (uint64_t)s->n_layers * s->d_ff;
    if (m->ffn) { /* all bundles in DRAM */
        for (uint32_t l = 0; l < s->n_layers; l++)
            ffn_matrix_copy(m, l, vec ? FFN_PART_GATE : FFN_PART_UP, dst + (uint64_t)l * s->d_ff * row);
        return 0;
    }
    FILE *in = fopen(m->ffn_path, "rb");
    if (!in)
        return err_set(err, errlen, "%s: cannot open: %s", m->ffn_path, strerror(errno));
    uint8_t *bundle = malloc(m->bundle_stride);
    int rc = bundle ? 0 : err_set(err, errlen, "out of memory reading %s", m->ffn_path);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        if (fread(bundle, 1, m->bundle_stride, in) != m->bundle_stride)
            rc = err_set(err, errlen, "%s: short read at bundle %llu", m->ffn_path, (unsigned long long)i);
        else /* checked as loaded: these rows decide what is read (issue 47) */
            rc = model_bundle_check(m, (uint32_t)(i / s->d_ff), (uint32_t)(i % s->d_ff), bundle, err, errlen);
        if (rc == 0)
            memcpy(dst + i * row, bundle + skip, row);
    }
    free(bundle);
    fclose(in);
    return rc;
}

const void *neuron_select_rows(const struct neuron_select *s, const void *matrix, int layer)
{
    const struct model_shape *sh = &s->m->shape;
    return matrix ? (const uint8_t *)matrix + (uint64_t)layer * sh->d_ff * wtype_row_bytes(s->m->dtype, sh->d_model)
                  : NULL;
}

int neuron_select_load_matrix(const struct model *m, unsigned vec, void **out, char *err, size_t errlen)
{
    uint64_t bytes = neuron_select_matrix_bytes(m);
    *out = malloc(bytes ? bytes : 1);
    if (!*out)
        return err_set(err, errlen, "cannot allocate %llu bytes for the %s rows", (unsigned long long)bytes,
                       vec ? "gate" : "up-projection");
    return gather_rows(m, vec, *out, err, errlen);
}

int neuron_select_open(struct neuron_select *s, const struct model *m, const struct select_config *c, char *err,
                       size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cfg = *c;
    s->m = m;
    if (neuron_select_check(m, c, err, errlen) != 0)
        return -1;
    const struct neuron_source_ops *o = select_source(c);
    s->z = malloc(m->shape.d_ff * sizeof *s->z);
    s->g = malloc(m->shape.d_ff * sizeof *s->g);
    s->xs = malloc(m->shape.d_model * sizeof *s->xs);
    int rc = s->z && s->g && s->xs ? 0 : err_set(err, errlen, "out of memory choosing neurons");
    if (rc == 0 && o->open)
        rc = o->open(s, err, errlen);
    s->rows_bytes = (s->up ? neuron_select_matrix_bytes(m) : 0) + (s->gate ? neuron_select_matrix_bytes(m) : 0);
    if (rc != 0)
        neuron_select_close(s);
    return rc;
}

void neuron_select_close(struct neuron_select *s)
{
    free(s->up);
    free(s->gate);
    free(s->z);
    free(s->g);
    free(s->h);
    free(s->xs);
    value_sample_free(&s->sample);
    memset(s, 0, sizeof *s);
}

uint32_t neuron_select_layer(struct neuron_select *s, int layer, struct cpu_kernels *k, const float *x,
                             uint32_t *out)
{
    return select_source(&s->cfg)->layer(s, layer, k, x, out);
}
