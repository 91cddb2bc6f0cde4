/* --backend for the commands that compute (backend_opts.h). */
#include "cli/backend_opts.h"

#include <stdio.h>

#include "common/log.h"

int cli_backend_probe(const char *name, const struct fb_settings *set, struct cli_backend *out, char *err,
                      size_t errlen)
{
    *out = (struct cli_backend){.ops = backend_find(name)};
    if (!out->ops) { /* the option's allowed list and backend_find disagree */
        snprintf(err, errlen, "internal: no backend '%s' (known: %s)", name, backend_names());
        return -1;
    }
    if (out->ops->describe(set, &out->dev, err, errlen) != 0)
        return -1;
    if (!out->dev.device[0])
        snprintf(out->dev.device, sizeof out->dev.device, "unknown");
    return 0;
}

int cli_backend_open(const char *cmd, const char *name, const struct fb_settings *set, struct cli_backend *out)
{
    char err[1024];
    if (cli_backend_probe(name, set, out, err, sizeof err) == 0)
        return 0;
    if (!out->ops)
        fb_error("%s --backend: %s", cmd, err);
    else
        fb_error("%s --backend %s: %s", cmd, name, err);
    return -1;
}

void cli_backend_provenance(cJSON *prov, const struct cli_backend *b)
{
    cJSON_AddStringToObject(prov, "backend", b->ops->name);
    cJSON_AddStringToObject(prov, "device", b->dev.device);
    cJSON_AddBoolToObject(prov, "emulated", b->dev.emulated);
}
