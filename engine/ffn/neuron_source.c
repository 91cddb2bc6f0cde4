/* The neuron sources by name (neuron_source.h): sources.def's list. */
#include "engine/ffn/neuron_source.h"

#include <string.h>

static const struct neuron_source_ops *const sources[] = {
#define SOURCE(x, names, run_help) &source_##x,
#include "engine/ffn/sources.def"
#undef SOURCE
};
#define N_SOURCES (sizeof sources / sizeof sources[0])

const struct neuron_source_ops *neuron_source_find(const char *name, bool *cal)
{
    for (size_t i = 0; i < N_SOURCES; i++) {
        bool is_cal = sources[i]->cal_name && !strcmp(name, sources[i]->cal_name);
        if (is_cal || !strcmp(name, sources[i]->name)) {
            if (cal)
                *cal = is_cal;
            return sources[i];
        }
    }
    return NULL;
}

void neuron_source_names(char *buf, size_t len)
{
    neuron_source_names_then(buf, len, NULL);
}

void neuron_source_names_then(char *buf, size_t len, const char *last)
{
    const char *names[2 * N_SOURCES + 1];
    size_t n = 0;
    for (size_t i = 0; i < N_SOURCES; i++) {
        if (!sources[i]->layer) /* not computed: not chosen by name */
            continue;
        names[n++] = sources[i]->name;
        if (sources[i]->cal_name)
            names[n++] = sources[i]->cal_name;
    }
    if (last)
        names[n++] = last;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < n && len; i++) {
        strncat(buf, i == 0 ? "" : i + 1 == n ? " or " : ", ", len - strlen(buf) - 1);
        strncat(buf, names[i], len - strlen(buf) - 1);
    }
}
