/* Phi-3's rope_scaling (Phi-3-mini-128k, Phi-3.5): longrope, as the pinned
 * transformers 4.46.3 reads it (configuration_phi3.py and
 * modeling_phi3.py's Phi3LongRoPEScaledRotaryEmbedding):
 *   - rope_scaling is null, or an object of exactly "type", "short_factor"
 *     and "long_factor" (Phi3Config refuses any other count of keys: the
 *     "attention_factor", "short_mscale", "long_mscale" and "factor" later
 *     versions read are refused here, named);
 *   - type "longrope", or "su" and "yarn", which Phi3Config renames to
 *     longrope (_rope_scaling_adjustment);
 *   - each list holds hidden_size / num_attention_heads / 2 numbers (one
 *     per rotated pair), here also above 0 and finite (each divides a
 *     frequency: inv_freq[j] = 1 / (factor[j] * theta^(2j / head_dim)));
 *   - original_max_position_embeddings, a top-level key (4096 when
 *     absent, Phi3Config's default), at most max_position_embeddings;
 *     max / original is the shape's rope_factor, from which cos and sin
 *     are scaled by sqrt(1 + ln(factor) / ln(original)) above 1.
 * Which list rotates which position: LONGROPE_RULE (engine/model/model.h). */
#include "engine/import/import_hf_arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"

/* A factor list of exactly `pairs` positive finite numbers into out. */
static int factor_list(const struct config *c, const cJSON *r, const char *key, uint32_t pairs, double *out)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(r, key), *v;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != (int)pairs)
        return err_set(c->err, c->errlen,
                       "%s: \"rope_scaling\" \"%s\" must be a list of %u numbers (hidden_size / "
                       "num_attention_heads / 2)",
                       c->path, key, pairs);
    uint32_t j = 0;
    cJSON_ArrayForEach(v, list)
    {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0)
            return err_set(c->err, c->errlen, "%s: \"rope_scaling\" \"%s\"[%u] must be a number above 0", c->path,
                           key, j);
        out[j++] = v->valuedouble;
    }
    return 0;
}

/* The object's keys are transformers 4.46.3's three, its type longrope. */
static int longrope_keys(const struct config *c, const cJSON *r)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, r)
    {
        if (strcmp(k->string, "type") && strcmp(k->string, "short_factor") && strcmp(k->string, "long_factor"))
            return err_set(c->err, c->errlen,
                           "%s: \"rope_scaling\" key \"%s\" is not supported for phi3 (transformers 4.46.3 reads "
                           "type, short_factor and long_factor only)",
                           c->path, k->string);
    }
    const char *type = cfg_str(r, "type");
    if (!type)
        return err_set(c->err, c->errlen, "%s: \"rope_scaling\" needs \"type\" (longrope) for phi3", c->path);
    if (strcmp(type, "longrope") && strcmp(type, "su") && strcmp(type, "yarn"))
        return err_set(c->err, c->errlen,
                       "%s: \"rope_scaling\" type \"%s\" is not supported for phi3 (longrope, or su and yarn, its "
                       "older names)",
                       c->path, type);
    return 0;
}

/* original_max_position_embeddings: a count from 2 (its log divides the
 * attention factor's) to max_position_embeddings. */
static int longrope_original(const struct config *c, struct model_shape *s)
{
    uint32_t orig = 4096;
    if (cfg_uint(c, "original_max_position_embeddings", &orig, 0))
        return -1;
    if (orig < 2 || orig > s->max_positions)
        return err_set(c->err, c->errlen,
                       "%s: \"original_max_position_embeddings\" %u must be from 2 to \"max_position_embeddings\" %u "
                       "with longrope",
                       c->path, orig, s->max_positions);
    s->rope_original_max_positions = orig;
    s->rope_factor = (double)s->max_positions / orig;
    return 0;
}

int cfg_longrope_scaling(const struct config *c, struct model_shape *s)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(c->json, "rope_scaling");
    if (!r || cJSON_IsNull(r))
        return 0;
    if (!cJSON_IsObject(r))
        return err_set(c->err, c->errlen, "%s: \"rope_scaling\" must be null or an object", c->path);
    uint32_t pairs = hf_head_dim(s) / 2;
    if (pairs > MODEL_MAX_ROPE_PAIRS)
        return err_set(c->err, c->errlen, "%s: longrope over %u pairs of a head is over flashbed's %u", c->path,
                       pairs, MODEL_MAX_ROPE_PAIRS);
    if (longrope_keys(c, r) || factor_list(c, r, "short_factor", pairs, s->rope_short_factor) ||
        factor_list(c, r, "long_factor", pairs, s->rope_long_factor) || longrope_original(c, s))
        return -1;
    s->rope_pairs = pairs;
    snprintf(s->rope_scaling, sizeof s->rope_scaling, "longrope");
    return 0;
}
