/* Activation predictors (the paper's §3.1, App. B): per layer a rank-r
 * predictor on the FFN input x (after the layer's norm),
 *
 *   logits = B · (A · x) + bias      A: rank × d_model, B: d_ff × rank
 *
 * and neuron i is predicted active when sigmoid(logits[i]) > threshold,
 * i.e. logits[i] > log(t / (1 - t)): no exponential per neuron. Ranks may
 * differ per layer (the paper gives its sensitive layers larger ones), and
 * so may thresholds: one for all layers (default 0.5), or per layer the
 * highest that reaches a target recall on held-out rows (training's
 * --target-recall: the paper's operating point is stated as a recall).
 *
 * What "active" means is recorded with the predictor (what it was trained
 * to predict): the ReLU family (ReLU, squared ReLU, FATReLU), the
 * activation's output is not zero (a GLU's gate); SiLU and GELU FFNs,
 * |h| > act_threshold with h = act(gate·x)·(up·x) or act(up·x + b).
 *
 * Stored in the model folder: predictor.safetensors (A and B in f32 or
 * f16, the biases f32; tensors "layers.L.predictor.a|b|bias") and a
 * "predictor" entry in model.json (ranks, "threshold" or per layer
 * "thresholds" with the "target_recall" they were calibrated to, target,
 * act_threshold, the training's provenance). All weights live in one allocation, counted
 * by predictor_bytes.
 *
 * Functions return 0, or -1 with the reason in err (naming the file); a
 * loaded predictor is read-only and may be shared by threads. */
#ifndef FLASHBED_ENGINE_PREDICTOR_H
#define FLASHBED_ENGINE_PREDICTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/compute/cpu_kernels.h"
#include "engine/model/dtype.h"

#define PREDICTOR_FILE "predictor.safetensors"

enum predictor_target {
    PREDICT_RELU,    /* the ReLU family: act(up·x + b) != 0 (> 0 for ReLU), a GLU's act(gate·x) != 0 */
    PREDICT_GLU_ABS, /* |h| > act_threshold: h = act(gate·x)·(up·x) (GLU), act(up·x + b) (GELU FFNs); the
                      * name (and "glu_abs" in files) predates plain GELU FFNs */
};

struct predictor_layer {
    uint32_t rank;
    void *a;     /* [rank][d_model] in the predictor's dtype */
    void *b;     /* [d_ff][rank] */
    float *bias; /* [d_ff] */
    double threshold; /* probability above which a neuron is predicted active */
};

struct predictor {
    uint32_t n_layers, d_model, d_ff;
    enum fb_dtype dtype;           /* A and B: DTYPE_F32 or DTYPE_F16 */
    double target_recall;          /* > 0: the layers' thresholds were calibrated to this recall */
    enum predictor_target target;
    float act_threshold;           /* PREDICT_GLU_ABS */
    struct predictor_layer *layers; /* [n_layers] */
    void *mem;                     /* every layer's A, B and bias */
    size_t mem_bytes;
    cJSON *training;               /* how it was trained (owned; NULL: not recorded) */
};

/* Whether a predictor's A and B may be stored as t: the types its trainer
 * writes and its kernels were measured on (f32 and f16). */
bool predictor_wtype_ok(enum fb_dtype t);

/* Those types' names into buf, in the table's order, `sep` between them
 * and `last` before the last: "f32 or f16" (", ", " or "), "f32|f16" (an
 * option's allowed values). Returns buf. */
const char *predictor_wtype_names(char *buf, size_t len, const char *sep, const char *last);

/* Zeroed weights of the given ranks (each 1..min(d_model, d_ff)), in a
 * type predictor_wtype_ok takes. */
int predictor_alloc(struct predictor *p, uint32_t n_layers, uint32_t d_model, uint32_t d_ff, const uint32_t *ranks,
                    enum fb_dtype dtype, char *err, size_t errlen);
void predictor_free(struct predictor *p);

/* A and B as f32 in and out of the predictor's dtype (training works in f32). */
void predictor_set_layer(struct predictor *p, uint32_t l, const float *a, const float *b, const float *bias);
void predictor_get_layer(const struct predictor *p, uint32_t l, float *a, float *b, float *bias);

/* One threshold for every layer (target_recall cleared: set by hand). */
void predictor_set_threshold(struct predictor *p, double t);
/* Whether every layer has the same threshold (then in *t). */
bool predictor_threshold_uniform(const struct predictor *p, double *t);
/* The thresholds in words: "0.5", or "per layer 0.031 to 0.42 (recall 0.95
 * on held-out rows)". */
void predictor_threshold_text(const struct predictor *p, char *buf, size_t len);

/* Bytes the predictor holds in DRAM, and its multiply-adds per token. */
uint64_t predictor_bytes(const struct predictor *p);
uint64_t predictor_madds(const struct predictor *p);
/* The largest rank (the scratch a forward needs: h[max_rank]). */
uint32_t predictor_max_rank(const struct predictor *p);

/* Layer l's predicted-active neurons for FFN input x[d_model]: ascending
 * ids into out[d_ff]; returns how many. Scratch: h[max rank], logits[d_ff].
 * Computed with the backend's matvec (its threads); allocates nothing. */
uint32_t predictor_predict(const struct predictor *p, uint32_t l, struct cpu_kernels *k,
                           const float *x, float *h, float *logits, uint32_t *out);

/* Layer l's predicted-active neurons from its logits[d_ff] (computed here
 * by predictor_predict, or on a device): ascending ids into out[d_ff];
 * returns how many. */
uint32_t predictor_choose(const struct predictor *p, uint32_t l, const float *logits, uint32_t *out);

/* The logit a probability threshold t stands for: -inf at 0, +inf at 1
 * (computed in double: a calibrated threshold near 1 keeps its logit). */
float predictor_logit_threshold(double t);
/* The probability a logit cut stands for (its inverse). */
double predictor_threshold_of_logit(float cut);

/* Writes dir/predictor.safetensors and the "predictor" entry of
 * dir/model.json (each through a temporary). An existing predictor is
 * replaced only with replace. */
int predictor_save(const struct predictor *p, const char *model_dir, bool replace, char *err, size_t errlen);
/* Loads dir's predictor; checks it against the model's shape (n_layers,
 * d_model, d_ff). 1 (p zeroed) when the folder has none. */
int predictor_load(struct predictor *p, const char *model_dir, uint32_t n_layers, uint32_t d_model, uint32_t d_ff,
                   char *err, size_t errlen);

/* model.json's "predictor" entry for p (what predictor_save writes; eval
 * reports carry it too). */
cJSON *predictor_describe(const struct predictor *p);
/* p's thresholds into obj: "threshold" when one serves every layer and
 * was set by hand, else "thresholds" [n_layers] and "target_recall". */
void predictor_thresholds_json(const struct predictor *p, cJSON *obj);

/* Whether dir has a predictor (model.json's "predictor" entry or the
 * weights file): what predictor_save refuses to replace unasked. */
bool predictor_present(const char *model_dir);

const char *predictor_target_name(enum predictor_target t);

#endif
