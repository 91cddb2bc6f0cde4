/* A transformers reference fixture (tools/make_hf_fixture.py): its
 * reference.json and logits.f32, read and checked before anything is
 * compared with them. Each refusal names the file at fault and what is wrong
 * with it: a reference that disagrees with itself (positions against its id
 * lists, the logits file's size, a NaN logit) or with the model converted
 * from its safetensors (vocabulary, positions, an id outside the
 * vocabulary). Single-threaded test helper; returns 0, or -1 with err. */
#ifndef FLASHBED_TESTS_HF_REFERENCE_H
#define FLASHBED_TESTS_HF_REFERENCE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/json_file.h"

#define HF_REF_MAX_POSITIONS 4096
#define HF_REF_MAX_VOCAB 1000000

struct hf_reference {
    int *ids;          /* [positions]: prompt_ids then greedy_ids */
    int n_prompt;      /* the first n_prompt ids are the prompt */
    int positions;     /* every position has logits */
    int vocab;
    float *logits;     /* [positions][vocab] */
    cJSON *json;       /* reference.json (tokenizer_cases among it) */
};

static inline void hf_reference_free(struct hf_reference *r)
{
    free(r->ids);
    free(r->logits);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof *r);
}

/* Appends the integer array key of r->json to r->ids from index at. */
static inline int hf_ref_ids(struct hf_reference *r, const char *key, int at, const char *path, char *err,
                             size_t errlen)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(r->json, key), *v;
    int i = 0;
    cJSON_ArrayForEach(v, a)
    {
        char what[64];
        uint64_t id;
        snprintf(what, sizeof what, "%s[%d]", key, i);
        if (at + i >= r->positions)
            return snprintf(err, errlen, "%s: prompt_ids and greedy_ids hold more than logits.positions %d ids",
                            path, r->positions), -1;
        if (json_number_u64(v, what, 0, HF_REF_MAX_VOCAB, &id, path, err, errlen) != 0)
            return -1;
        r->ids[at + i++] = (int)id;
    }
    return i;
}

/* logits.f32 beside reference.json: exactly positions x vocab finite floats. */
static inline int hf_ref_logits(struct hf_reference *r, const char *fixture, char *err, size_t errlen)
{
    char path[1200];
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(r->json, "logits");
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(l, "file");
    snprintf(path, sizeof path, "%s/%s", fixture, cJSON_IsString(file) ? file->valuestring : "logits.f32");
    size_t len = 0, want = (size_t)r->positions * (size_t)r->vocab * sizeof(float);
    char *raw = read_text_file(path, &len);
    if (!raw)
        return snprintf(err, errlen, "%s: cannot read it", path), -1;
    if (len != want) {
        free(raw);
        return snprintf(err, errlen, "%s: %zu bytes, but %d positions x %d logits of 4 bytes are %zu", path, len,
                        r->positions, r->vocab, want), -1;
    }
    r->logits = malloc(want);
    if (r->logits)
        memcpy(r->logits, raw, want); /* little-endian f32, as this machine's */
    free(raw);
    if (!r->logits)
        return snprintf(err, errlen, "%s: out of memory", path), -1;
    for (size_t i = 0; i < want / sizeof(float); i++)
        if (!isfinite(r->logits[i]))
            return snprintf(err, errlen, "%s: logit %zu of position %zu is %g", path, i % (size_t)r->vocab,
                            i / (size_t)r->vocab, r->logits[i]), -1;
    return 0;
}

/* Reads fixture/reference.json and its logits; checks them against each other. */
static inline int hf_reference_load(struct hf_reference *r, const char *fixture, char *err, size_t errlen)
{
    char path[1200];
    memset(r, 0, sizeof *r);
    snprintf(path, sizeof path, "%s/reference.json", fixture);
    if (!(r->json = read_json_file(path)) || !cJSON_IsObject(r->json))
        return snprintf(err, errlen, "%s: cannot read it as a JSON object", path), hf_reference_free(r), -1;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(r->json, "logits");
    uint64_t positions, vocab;
    if (json_get_u64(l, "positions", 1, HF_REF_MAX_POSITIONS, &positions, path, err, errlen) != 0 ||
        json_get_u64(l, "vocab", 1, HF_REF_MAX_VOCAB, &vocab, path, err, errlen) != 0)
        return hf_reference_free(r), -1;
    r->positions = (int)positions;
    r->vocab = (int)vocab;
    if (!(r->ids = malloc(positions * sizeof *r->ids)))
        return snprintf(err, errlen, "%s: out of memory", path), hf_reference_free(r), -1;
    int n_prompt = hf_ref_ids(r, "prompt_ids", 0, path, err, errlen);
    int n_greedy = n_prompt < 0 ? -1 : hf_ref_ids(r, "greedy_ids", n_prompt, path, err, errlen);
    if (n_greedy < 0)
        return hf_reference_free(r), -1;
    if (n_prompt < 1 || n_prompt + n_greedy != r->positions)
        return snprintf(err, errlen, "%s: %d prompt_ids and %d greedy_ids, but logits.positions is %d", path,
                        n_prompt, n_greedy, r->positions), hf_reference_free(r), -1;
    r->n_prompt = n_prompt;
    if (hf_ref_logits(r, fixture, err, errlen) != 0)
        return hf_reference_free(r), -1;
    return 0;
}

/* The reference against the model converted from the fixture's
 * safetensors: the same vocabulary, every id inside it, every position
 * within the model's context. */
static inline int hf_reference_fits(const struct hf_reference *r, const char *fixture, int model_vocab,
                                    int model_positions, char *err, size_t errlen)
{
    if (r->vocab != model_vocab)
        return snprintf(err, errlen, "%s/reference.json: logits.vocab is %d, but %s/model.safetensors has %d tokens",
                        fixture, r->vocab, fixture, model_vocab), -1;
    if (r->positions > model_positions)
        return snprintf(err, errlen, "%s/reference.json: %d positions, but the model holds %d", fixture,
                        r->positions, model_positions), -1;
    for (int p = 0; p < r->positions; p++)
        if (r->ids[p] >= model_vocab)
            return snprintf(err, errlen, "%s/reference.json: %s[%d] = %d is outside the vocabulary of %d", fixture,
                            p < r->n_prompt ? "prompt_ids" : "greedy_ids", p < r->n_prompt ? p : p - r->n_prompt,
                            r->ids[p], model_vocab), -1;
    return 0;
}

#endif
