/* tokenizer.json of the SentencePiece kind into a llama2.c tokenizer.bin
 * (Llama, Persimmon); the byte-level kind (OPT, Falcon, Phi) is left to
 * the engine's own reader of tokenizer.json. */
#include "engine/import/import_hf_arch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_spm.h"

/* A vocab key as llama2.c spells it: "▁" (U+2581, e2 96 81), which is
 * SentencePiece's space, becomes ' '. NULL when out of memory. */
static char *sp_piece(const char *key)
{
    size_t n = strlen(key);
    char *p = malloc(n + 1), *q = p;
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 < n && !memcmp(key + i, "\xe2\x96\x81", 3)) {
            *q++ = ' ';
            i += 2;
        } else
            *q++ = key[i];
    }
    *q = '\0';
    return p;
}

/* model.vocab into pieces[id]; ids are checked here once for everything
 * that reads them later (the merges). */
static int read_sp_vocab(const cJSON *vocab, char **pieces, uint32_t vocab_size, const char *path, char *err,
                         size_t errlen)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab)
    {
        uint64_t id;
        if (json_number_u64(e, "vocab entry", 0, vocab_size - 1, &id, path, err, errlen))
            return err_set(err, errlen, "%s: vocab entry '%.100s' has an id outside 0..%u or not a whole number",
                           path, e->string, vocab_size - 1);
        char *p = sp_piece(e->string);
        if (!p)
            return err_set(err, errlen, "%s: out of memory", path);
        free(pieces[id]);
        pieces[id] = p;
    }
    return 0;
}

/* The vocab as (piece, id) sorted by piece, for lookups by bsearch: a
 * cJSON object lookup is a list walk, and 32,000 merges over a 32,000-piece
 * vocab made the tokenizer most of a small model's conversion. */
struct vocab_entry {
    const char *piece;
    double id;
};

static int by_piece(const void *a, const void *b)
{
    return strcmp(((const struct vocab_entry *)a)->piece, ((const struct vocab_entry *)b)->piece);
}

/* The merged piece of merge e ("a b" or ["a", "b"]) into merged; false
 * for anything else. */
/* A merge's two halves, "a b" (exactly two parts, as tokenizers splits
 * it) or ["a", "b"], into a and b; false for any other form. */
static bool merge_parts(const cJSON *e, char *a, char *b, size_t len)
{
    if (cJSON_IsString(e)) {
        const char *sp = strchr(e->valuestring, ' ');
        if (!sp || strchr(sp + 1, ' '))
            return false;
        snprintf(a, len, "%.*s", (int)(sp - e->valuestring), e->valuestring);
        snprintf(b, len, "%s", sp + 1);
        return true;
    }
    if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
        cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
        snprintf(a, len, "%s", cJSON_GetArrayItem(e, 0)->valuestring);
        snprintf(b, len, "%s", cJSON_GetArrayItem(e, 1)->valuestring);
        return true;
    }
    return false;
}

/* Merge rank's vocab entry of its merged piece; -1 with err when the merge
 * is malformed or names a piece (a, b or ab) the vocab lacks, as the
 * tokenizers library's BPE builder refuses it (MergeTokenOutOfVocabulary). */
static int merge_target(const cJSON *e, int rank, const struct vocab_entry *idx, size_t n,
                        const struct vocab_entry **hit, const char *path, char *err, size_t errlen)
{
    char a[1024], b[1024], ab[2048];
    if (!merge_parts(e, a, b, sizeof a))
        return err_set(err, errlen, "%s: merge %d is not \"a b\" or [\"a\", \"b\"]", path, rank);
    snprintf(ab, sizeof ab, "%s%s", a, b);
    const char *part[3] = {a, b, ab};
    for (int k = 0; k < 3; k++) {
        struct vocab_entry key = {part[k], 0};
        *hit = bsearch(&key, idx, n, sizeof *idx, by_piece);
        if (!*hit)
            return err_set(err, errlen, "%s: merge %d (%.100s + %.100s) needs '%.200s', which model.vocab lacks",
                           path, rank, a, b, part[k]);
    }
    return 0;
}

/* Merge rank r gives its merged piece the score -r (the first rank of a
 * piece made by several merges); merges of "a b" or ["a", "b"]. -1 with
 * err when out of memory or a merge breaks the format's rules. */
static int score_merges(const cJSON *vocab, const cJSON *merges, float *scores, uint32_t vocab_size, const char *path,
                        char *err, size_t errlen)
{
    size_t n = 0, cap = (size_t)cJSON_GetArraySize(vocab);
    struct vocab_entry *idx = malloc((cap ? cap : 1) * sizeof *idx);
    if (!idx)
        return err_set(err, errlen, "%s: out of memory for the merges", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab)
    {
        if (cJSON_IsNumber(e) && n < cap)
            idx[n++] = (struct vocab_entry){e->string, e->valuedouble};
    }
    qsort(idx, n, sizeof *idx, by_piece);
    int rank = 0, rc = 0;
    cJSON_ArrayForEach(e, merges)
    {
        const struct vocab_entry *hit;
        if ((rc = merge_target(e, rank, idx, n, &hit, path, err, errlen)) != 0)
            break;
        if (hit->id >= 0 && hit->id < vocab_size && scores[(int)hit->id] == TOKENIZER_NO_MERGE)
            scores[(int)hit->id] = -(float)rank;
        rank++;
    }
    free(idx);
    return rc;
}

/* tokenizer.bin at out: the longest piece's length, then per id its score,
 * length and bytes. Every id needs a piece. (out is created before that is
 * checked; it lies in the model's temporary folder, which a failure removes.) */
static int write_llama2c_tokenizer(const char *out, char *const *pieces, const float *scores, uint32_t vocab_size,
                                   const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(out, "wb");
    int32_t max_len = 1;
    for (uint32_t i = 0; i < vocab_size; i++) {
        if (!pieces[i]) {
            if (f)
                fclose(f);
            return err_set(err, errlen, "%s: no vocab entry for id %u", path, i);
        }
        if ((int32_t)strlen(pieces[i]) > max_len)
            max_len = (int32_t)strlen(pieces[i]);
    }
    int bad = !f || fwrite(&max_len, 4, 1, f) != 1;
    for (uint32_t i = 0; i < vocab_size && !bad; i++) {
        int32_t len = (int32_t)strlen(pieces[i]);
        bad = fwrite(&scores[i], 4, 1, f) != 1 || fwrite(&len, 4, 1, f) != 1 ||
              fwrite(pieces[i], 1, (size_t)len, f) != (size_t)len;
    }
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad)
        return err_set(err, errlen, "%s: cannot write", out);
    return 0;
}

/* tokenizer.json of the SentencePiece kind (Llama: BPE with byte fallback,
 * "▁" for spaces) rewritten as a llama2.c tokenizer.bin: merge rank r
 * becomes the merged piece's score -r. Returns 1, writing nothing, for a
 * byte-level BPE (GPT-2/OPT), which the engine reads as tokenizer.json. */
int hf_convert_sp_tokenizer(const char *path, const struct model_shape *s, const char *out, char *err,
                            size_t errlen)
{
    cJSON *t = hf_read_json(path, err, errlen);
    if (!t)
        return -1;
    int rc = -1;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(t, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const char *type = cfg_str(model, "type");
    char **pieces = calloc(s->vocab_size, sizeof *pieces);
    float *scores = malloc(s->vocab_size * sizeof *scores);
    if (!pieces || !scores) {
        err_set(err, errlen, "%s: out of memory for %u pieces", path, s->vocab_size);
        goto out;
    }
    if (!type || strcmp(type, "BPE") != 0 || !cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
        err_set(err, errlen, "%s: not a BPE tokenizer with \"vocab\" and \"merges\"", path);
        goto out;
    }
    if (!cfg_bool(model, "byte_fallback", 0)) {
        rc = 1; /* byte-level: kept as tokenizer.json */
        goto out;
    }
    for (uint32_t i = 0; i < s->vocab_size; i++)
        scores[i] = TOKENIZER_NO_MERGE;
    if (read_sp_vocab(vocab, pieces, s->vocab_size, path, err, errlen) != 0)
        goto out;
    if (score_merges(vocab, merges, scores, s->vocab_size, path, err, errlen) != 0)
        goto out;
    rc = write_llama2c_tokenizer(out, pieces, scores, s->vocab_size, path, err, errlen);
out:
    for (uint32_t i = 0; pieces && i < s->vocab_size; i++)
        free(pieces[i]);
    free(pieces);
    free(scores);
    cJSON_Delete(t);
    return rc;
}

int hf_convert_spm_tokenizer(const char *path, const struct model_shape *s, const char *out, char *err,
                             size_t errlen)
{
    struct tokenizer t;
    if (tokenizer_load_spm(&t, path, (int)s->vocab_size, err, errlen) != 0)
        return -1;
    int rc = -1;
    if (!t.add_space_prefix)
        err_set(err, errlen, "%s: normalizer_spec.add_dummy_prefix is false; a model folder's tokenizer.bin "
                "always adds the dummy prefix (Llama's, Mistral's)", path);
    else
        rc = write_llama2c_tokenizer(out, t.pieces, t.scores, s->vocab_size, path, err, errlen);
    tokenizer_free(&t);
    return rc;
}
