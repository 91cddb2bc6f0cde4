/* config.json's rope_scaling for the Llama family (transformers'
 * modeling_rope_utils.py): the kinds the engine computes become the
 * shape's rope_scaling keys (model.json keeps them; arch_rope_freqs turns
 * them into RoPE's frequencies); any other kind is refused, named. */
#include "engine/import/import_hf_arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"

/* rope_scaling's number key, positive and finite; -1 naming it. */
static int scaling_num(const struct config *c, const cJSON *r, const char *type, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0)
        return err_set(c->err, c->errlen, "%s: \"rope_scaling\" of type \"%s\" needs \"%s\", a number above 0", c->path,
                       type, key);
    *out = v->valuedouble;
    return 0;
}

/* Llama 3.1's: factor, low_freq_factor, high_freq_factor and
 * original_max_position_embeddings. */
static int llama3_scaling(const struct config *c, const cJSON *r, struct model_shape *s)
{
    double orig = 0; /* set by scaling_num when it returns 0 (GCC -O3 cannot see it) */
    if (scaling_num(c, r, "llama3", "factor", &s->rope_factor) ||
        scaling_num(c, r, "llama3", "low_freq_factor", &s->rope_low_freq_factor) ||
        scaling_num(c, r, "llama3", "high_freq_factor", &s->rope_high_freq_factor) ||
        scaling_num(c, r, "llama3", "original_max_position_embeddings", &orig))
        return -1;
    if (orig != floor(orig) || orig > MODEL_MAX_POSITIONS)
        return err_set(c->err, c->errlen, "%s: \"rope_scaling\" \"original_max_position_embeddings\" %g is not a count",
                       c->path, orig);
    if (s->rope_high_freq_factor <= s->rope_low_freq_factor)
        return err_set(c->err, c->errlen,
                       "%s: \"rope_scaling\" \"high_freq_factor\" %g must be above \"low_freq_factor\" %g", c->path,
                       s->rope_high_freq_factor, s->rope_low_freq_factor);
    s->rope_original_max_positions = (uint32_t)orig;
    snprintf(s->rope_scaling, sizeof s->rope_scaling, "llama3");
    return 0;
}

int cfg_rope_scaling(const struct config *c, struct model_shape *s)
{
    /* newer transformers save rope_theta and the scaling together as
     * rope_parameters; older ones rope_theta beside rope_scaling */
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(c->json, "rope_parameters");
    if (cJSON_IsObject(r))
        s->rope_theta = cfg_num(r, "rope_theta", s->rope_theta);
    else
        r = cJSON_GetObjectItemCaseSensitive(c->json, "rope_scaling");
    if (!r || cJSON_IsNull(r))
        return 0;
    /* transformers reads "rope_type", and "type" from older configs */
    const char *type = cJSON_IsObject(r) ? cfg_str(r, "rope_type") : NULL;
    if (cJSON_IsObject(r) && !type)
        type = cfg_str(r, "type");
    if (!type)
        return err_set(c->err, c->errlen, "%s: \"rope_scaling\" must be null or an object with \"rope_type\"", c->path);
    if (!strcmp(type, "default"))
        return 0;
    if (!strcmp(type, "llama3"))
        return llama3_scaling(c, r, s);
    if (!strcmp(type, "linear")) {
        snprintf(s->rope_scaling, sizeof s->rope_scaling, "linear");
        return scaling_num(c, r, "linear", "factor", &s->rope_factor);
    }
    return err_set(c->err, c->errlen, "%s: \"rope_scaling\" type \"%s\" is not supported (default, linear, llama3)",
                   c->path, type);
}
