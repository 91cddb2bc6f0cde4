/* A model whose matrices keep types of their own (model.json's
 * "tensor_dtypes": "per-tensor", as an import keeps a GGUF's blocks):
 * written with model_writer_matrix_stored, opened with each matrix's
 * type, priced per tensor, and computed as the same model held in f32
 * with the same values (each rounded through its type first).
 *
 * From opt-tiny (f32): "mixed" keeps the attention matrices and the
 * learned positions in bf16 and the (tied) token embedding in f16, its
 * FFN bundles f32; "rounded" is f32 throughout with those tensors' values
 * rounded through bf16 and f16. The two compute the same products on the
 * same values in different kernels (a bf16 or f16 row widened as it is
 * read, against an f32 row): their logits agree to float rounding. The
 * bound, 1e-4 of the largest |logit|, is two orders above the f32
 * reassociation seen between kernels (about 1e-6 relative) and far below
 * the gap a wrong type would make (bf16 read as f16 scrambles every row).
 *
 * The mixed model also keeps its FFN as matrices (ffn_matrices.bin: up in
 * bf16, down in f16), which its dense FFN computes on (matvecs and
 * ffn_act) while rounded's reads its bundles; on cpu, sim and OpenCL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "model_fixture.h"
#include "test_files.h"
#include "common/json_file.h"
#include "engine/compute/backend.h"
#include "engine/ffn/ffn.h"
#include "engine/forward/engine.h"
#include "engine/model/ffn_matrix.h"
#include "engine/model/model_format.h"
#include "engine/model/model_verify.h"

/* The type each of opt-tiny's tensors takes in the mixed model (f32: as written). */
static enum fb_dtype mixed_type(const char *name)
{
    if (strstr(name, "attn.w") || !strcmp(name, "pos_embedding"))
        return DTYPE_BF16;
    return strcmp(name, "tok_embedding") ? DTYPE_F32 : DTYPE_F16;
}

/* One tensor of the source model into w: stored in its mixed type
 * (mixed), or in f32 with its values rounded through that type. */
static int copy_tensor(struct model_writer *w, const struct model *src, const cJSON *e, bool mixed)
{
    const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
    const cJSON *shape = cJSON_GetObjectItem(e, "shape");
    int ndim = cJSON_GetArraySize(shape);
    uint64_t dims[2] = {0, 0}, n = 1;
    for (int i = 0; i < ndim; i++)
        n *= dims[i] = (uint64_t)cJSON_GetArrayItem(shape, i)->valuedouble;
    const float *data = (const float *)((const char *)src->dram + (uint64_t)cJSON_GetObjectItem(e, "offset")->valuedouble);
    enum fb_dtype t = mixed_type(name);
    if (t == DTYPE_F32)
        return model_writer_tensor(w, name, data, ndim, dims);
    void *held = malloc(wtype_row_bytes(t, n));
    float *rounded = malloc(n * sizeof *rounded);
    dtype_from_f32(held, t, data, n);
    dtype_to_f32(rounded, held, t, n);
    int rc = mixed ? model_writer_matrix_stored(w, name, t, held, dims) : model_writer_tensor(w, name, rounded, ndim, dims);
    free(held);
    free(rounded);
    return rc;
}

/* n values rounded through type t: into held (t's bytes) and back into v. */
static void *round_through(float *v, size_t n, enum fb_dtype t)
{
    void *held = malloc(wtype_row_bytes(t, n));
    dtype_from_f32(held, t, v, n);
    dtype_to_f32(v, held, t, n);
    return held;
}

/* Layer l's FFN of src (its bundles) into w: up rounded through bf16 and
 * down through f16, as f32 bundles; the mixed model keeps them as
 * matrices in those types (ffn_matrices.bin), which its dense FFN reads,
 * and its bundles zero: were they read instead, its logits would part. */
static int copy_ffn(struct model_writer *w, const struct model *src, uint32_t l, bool mixed)
{
    uint32_t d = src->shape.d_model, ff = src->shape.d_ff;
    float *up = malloc((size_t)ff * d * sizeof *up), *down = malloc((size_t)d * ff * sizeof *down);
    ffn_matrix_f32(src, l, FFN_PART_UP, up);
    const float *bundles = src->layers[l].ffn_bundles;
    for (uint32_t i = 0; i < ff; i++)
        for (uint32_t j = 0; j < d; j++)
            down[(size_t)j * ff + i] = bundles[i * (src->bundle_stride / 4) + ffn_bundle_down(&src->shape) + j];
    void *up_held = round_through(up, (size_t)ff * d, DTYPE_BF16);
    void *down_held = round_through(down, (size_t)d * ff, DTYPE_F16);
    if (mixed) {
        memset(up, 0, (size_t)ff * d * sizeof *up);
        memset(down, 0, (size_t)d * ff * sizeof *down);
    }
    int rc = model_writer_ffn_layer(w, (int)l, up, NULL, down);
    if (mixed && rc == 0)
        rc = model_writer_ffn_matrix_stored(w, (int)l, "up", DTYPE_BF16, up_held) ||
             model_writer_ffn_matrix_stored(w, (int)l, "down", DTYPE_F16, down_held);
    free(up), free(down), free(up_held), free(down_held);
    return rc;
}

/* src rewritten into dir: mixed, or f32 with the mixed types' values. */
static int rewrite(const struct model *src, const char *dir, bool mixed, char *err, size_t errlen)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", src->dir, MODEL_JSON);
    char *text = read_text_file(path, NULL);
    cJSON *o = cJSON_Parse(text);
    free(text);
    struct model_writer w;
    int rc = model_writer_begin(&w, dir, &src->shape, DTYPE_F32, err, errlen);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(o, "dram"), "tensors"))
        rc = rc ? rc : copy_tensor(&w, src, e, mixed);
    for (uint32_t l = 0; l < src->shape.n_layers && !rc; l++)
        rc = copy_ffn(&w, src, l, mixed);
    const cJSON *tok = cJSON_GetObjectItem(o, "tokenizer");
    snprintf(path, sizeof path, "%s/%s", src->dir, cJSON_GetObjectItem(tok, "file")->valuestring);
    rc = rc ? rc : model_writer_copy_file(&w, path, cJSON_GetObjectItem(tok, "file")->valuestring);
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddItemToObject(meta, "tokenizer", cJSON_Duplicate(tok, 1));
    rc = rc ? (model_writer_abort(&w), cJSON_Delete(meta), rc) : model_writer_finish(&w, meta);
    cJSON_Delete(o);
    return rc;
}

static void test_types_read(const struct model *mixed, const struct model *rounded)
{
    CHECK(mixed->tensor_dtypes && !rounded->tensor_dtypes);
    CHECK(mixed->layers[0].wq_type == DTYPE_BF16 && mixed->layers[1].wo_type == DTYPE_BF16);
    CHECK(mixed->tok_embedding_type == DTYPE_F16 && mixed->output_type == DTYPE_F16);
    CHECK(mixed->pos_embedding_type == DTYPE_BF16 && mixed->dtype == DTYPE_F32);
    CHECK(rounded->layers[0].wq_type == DTYPE_F32 && rounded->tok_embedding_type == DTYPE_F32);
    CHECK(mixed->has_ffn_matrices && mixed->layers[1].ffn_up && mixed->layers[1].ffn_down && !mixed->layers[1].ffn_gate);
    CHECK(mixed->layers[1].ffn_up_type == DTYPE_BF16 && mixed->layers[1].ffn_down_type == DTYPE_F16);
    CHECK(!rounded->has_ffn_matrices && !rounded->layers[0].ffn_down);
    bool has[DTYPE_COUNT];
    model_weight_types(mixed, has);
    CHECK(has[DTYPE_F32] && has[DTYPE_F16] && has[DTYPE_BF16]);
    model_weight_types(rounded, has);
    CHECK(has[DTYPE_F32] && !has[DTYPE_F16] && !has[DTYPE_BF16]);
    /* attention at 2 bytes a weight instead of 4, the head at 2, the FFN's
     * matrices at 2 instead of its f32 bundles: what each tensor holds */
    const struct model_shape *s = &mixed->shape;
    uint64_t attn = 2ull * mixed->q_dim * s->d_model + 2ull * mixed->kv_dim * s->d_model;
    uint64_t head = (uint64_t)s->vocab_size * s->d_model + s->d_model, ffn = 2ull * s->d_ff * s->d_model;
    CHECK_U64(model_bytes_per_token(rounded) - model_bytes_per_token(mixed),
              s->n_layers * (attn + ffn) * 2 + head * 2);
}

/* Greedy decode of 12 positions from the same prompt, mixed on backend
 * be, rounded on cpu: the logits agree (be: sim and opencl as well as
 * cpu; a backend this machine lacks is skipped, saying so). */
static void test_same_logits(const struct model *mixed, const struct model *rounded, const struct backend_ops *be)
{
    const struct fb_settings set = fb_settings_defaults();
    struct engine a, b;
    char err[512];
    struct backend_device dev;
    if (be->describe(&set, &dev, err, sizeof err) != 0) {
        printf("test_model_tensor_types: %s skipped: %s\n", be->name, err);
        return;
    }
    CHECK(engine_init(&a, &set, mixed, be, &ffn_dense, 1, 16, err, sizeof err) == 0);
    CHECK(engine_init(&b, &set, rounded, &backend_cpu, &ffn_dense, 1, 16, err, sizeof err) == 0);
    int vocab = (int)mixed->shape.vocab_size, token = mixed->bos_id;
    double worst = 0, scale = 0;
    for (int pos = 0; pos < 12; pos++) {
        CHECK(engine_forward(&a, token, pos) == 0 && engine_forward(&b, token, pos) == 0);
        int best = 0;
        for (int v = 0; v < vocab; v++) {
            worst = fmax(worst, fabs((double)a.s.logits[v] - b.s.logits[v]));
            scale = fmax(scale, fabs((double)b.s.logits[v]));
            best = a.s.logits[v] > a.s.logits[best] ? v : best;
        }
        token = best;
    }
    CHECK(scale > 0 && worst <= 1e-4 * scale);
    if (worst > 1e-4 * scale)
        fprintf(stderr, "%s: max |dlogit| %.3g, max |logit| %.3g\n", be->name, worst, scale);
    engine_free(&a);
    engine_free(&b);
}

/* o printed into path (test_files.h's writer). */
static void write_json(const char *path, const cJSON *o)
{
    char *text = cJSON_Print(o);
    CHECK(text != NULL);
    test_write_text(path, text ? text : "");
    free(text);
}

/* The dense FFN's host form (what FFNs watching it call) on the mixed
 * model's matrices against the rounded model's bundles, one layer. */
static void test_host_form(const struct model *mixed, const struct model *rounded)
{
    const struct fb_settings set = fb_settings_defaults();
    struct engine a, b;
    char err[512];
    CHECK(engine_init(&a, &set, mixed, &backend_cpu, &ffn_dense, 1, 16, err, sizeof err) == 0);
    CHECK(engine_init(&b, &set, rounded, &backend_cpu, &ffn_dense, 1, 16, err, sizeof err) == 0);
    CHECK(a.ffn.host_zg != NULL && b.ffn.host_zg == NULL);
    uint32_t d = mixed->shape.d_model;
    float *x = malloc(d * sizeof *x), *ya = malloc(d * sizeof *ya), *yb = malloc(d * sizeof *yb);
    for (uint32_t i = 0; i < d; i++)
        x[i] = (float)((i * 37 % 101) - 50) / 25.0f;
    ffn_dense.forward(&a.ffn, 1, 0, x, ya);
    ffn_dense.forward(&b.ffn, 1, 0, x, yb);
    double worst = 0, scale = 0;
    for (uint32_t i = 0; i < d; i++) {
        worst = fmax(worst, fabs((double)ya[i] - yb[i]));
        scale = fmax(scale, fabs((double)yb[i]));
    }
    CHECK(scale > 0 && worst <= 1e-4 * scale);
    free(x), free(ya), free(yb);
    engine_free(&a);
    engine_free(&b);
}

/* model verify reads ffn_matrices.bin too: one byte changed is named. */
static void test_verify(const char *dir)
{
    char path[800], err[512];
    struct model_verify_report r;
    CHECK(model_verify(dir, NULL, &r, err, sizeof err) == 0 && model_verify_intact(&r) && r.checked);
    uint64_t before = r.tensors;
    snprintf(path, sizeof path, "%s/%s", dir, MODEL_FFN_MATRICES_FILE);
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, 100, SEEK_SET) == 0 && fputc(0x5a, f) != EOF && fclose(f) == 0);
    CHECK(model_verify(dir, NULL, &r, err, sizeof err) == 0 && r.bad_checksums == 1 && r.tensors == before);
    CHECK(r.n_listed == 1 && strstr(r.listed[0], "ffn_matrices.bin: tensor 'layers.0.ffn.up'"));
    struct model m;
    CHECK(model_open(&m, dir, err, sizeof err) == -1 && strstr(err, "ffn_matrices.bin: tensor 'layers.0.ffn.up'"));
}

/* model.json's rules: the key's one value, vectors in f32 whatever it says. */
static void test_refusals(const char *dir)
{
    char path[800], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, MODEL_JSON);
    char *text = read_text_file(path, NULL);
    cJSON *o = cJSON_Parse(text);
    free(text);
    struct model m;
    cJSON_ReplaceItemInObject(o, "tensor_dtypes", cJSON_CreateString("yes"));
    write_json(path, o);
    CHECK(model_open(&m, dir, err, sizeof err) == -1 && strstr(err, "\"tensor_dtypes\" must be \"per-tensor\""));
    cJSON_ReplaceItemInObject(o, "tensor_dtypes", cJSON_CreateString(MODEL_TENSOR_DTYPES));
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(o, "dram"), "tensors"))
        if (!strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "final_norm.weight"))
            cJSON_ReplaceItemInObject((cJSON *)e, "dtype", cJSON_CreateString("bf16"));
    write_json(path, o);
    CHECK(model_open(&m, dir, err, sizeof err) == -1 &&
          strstr(err, "tensor 'final_norm.weight' has dtype bf16, expected f32"));
    cJSON_Delete(o);
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-tensor-types-XXXXXX", dir[600], mdir[700], rdir[700], err[512];
    struct model_shape shape;
    struct model src, mixed, rounded;
    CHECK(fixture_opt_tiny(tmp, dir, sizeof dir, 7, 0.2, &shape, err, sizeof err) == 0);
    CHECK(model_open(&src, dir, err, sizeof err) == 0);
    snprintf(mdir, sizeof mdir, "%s/mixed", tmp);
    snprintf(rdir, sizeof rdir, "%s/rounded", tmp);
    CHECK(rewrite(&src, mdir, true, err, sizeof err) == 0);
    CHECK(rewrite(&src, rdir, false, err, sizeof err) == 0);
    model_close(&src);
    int ok = model_open(&mixed, mdir, err, sizeof err) == 0;
    if (!ok)
        fprintf(stderr, "%s\n", err);
    CHECK(ok && model_open(&rounded, rdir, err, sizeof err) == 0);
    if (ok) {
        test_types_read(&mixed, &rounded);
        test_same_logits(&mixed, &rounded, &backend_cpu);
        test_same_logits(&mixed, &rounded, &backend_sim);
        test_same_logits(&mixed, &rounded, &backend_opencl);
        test_host_form(&mixed, &rounded);
        test_verify(mdir);
        model_close(&mixed);
        model_close(&rounded);
    }
    test_refusals(mdir);
    CHECK(fixture_remove(tmp) == 0);
    return check_report("test_model_tensor_types");
}
