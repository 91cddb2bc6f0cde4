#include "engine/import/hf_act.h"

#include <stddef.h>
#include <string.h>

/* The first row of a flashbed name is the HF name it is written as. */
static const struct {
    const char *hf, *fb;
} acts[] = {
    {"relu", "relu"},
    {"relu2", "squared_relu"},
    {"gelu", "gelu"},
    {"gelu_new", "gelu_tanh"},
    {"gelu_pytorch_tanh", "gelu_tanh"},
    {"silu", "swiglu"},
    {"fatrelu", "fatrelu"},
    {"relu", "drelu"}, /* Bamboo's hidden_act: BambooMLP applies it to gate and up */
};

#define N_ACTS (sizeof acts / sizeof acts[0])

const char *hf_act_to_flashbed(const char *hf)
{
    for (size_t i = 0; i < N_ACTS; i++)
        if (!strcmp(acts[i].hf, hf))
            return acts[i].fb;
    return NULL;
}

const char *hf_act_from_flashbed(const char *fb)
{
    for (size_t i = 0; i < N_ACTS; i++)
        if (!strcmp(acts[i].fb, fb))
            return acts[i].hf;
    return NULL;
}

const char *hf_act_known(void)
{
    return "relu, relu2, gelu, gelu_new, gelu_pytorch_tanh, silu, fatrelu";
}
