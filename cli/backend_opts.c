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
    /* the smallest of everything: only whether it starts, and on what */
    struct cpu_kernels *ck = ck_create(set, 1, 1, 1, 1, err, errlen);
    struct backend_config cfg = {.set = set, .threads = 1, .max_dim = 1, .max_seq = 1, .max_heads = 1, .host = ck};
    struct backend *b = ck ? out->ops->create(&cfg, err, errlen) : NULL;
    if (b) {
        struct backend_info info;
        out->ops->info(b, &info);
        snprintf(out->device, sizeof out->device, "%s", info.device ? info.device : "unknown");
        out->emulated = info.emulated;
        out->host_visible = info.host_visible;
        out->mem_bytes = info.mem_bytes;
        out->ops->destroy(b);
    }
    ck_destroy(ck);
    return b ? 0 : -1;
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
    cJSON_AddStringToObject(prov, "device", b->device);
    cJSON_AddBoolToObject(prov, "emulated", b->emulated);
}
