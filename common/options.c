#include "common/options.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parse.h"

/* Which options the user gave, kept beside the values so that commands can
 * tell "--size 4G" from the default. One table at a time is enough for a CLI. */
#define MAX_OPTS 64
static const void *given_for;
static bool given[MAX_OPTS];

static size_t count_opts(const struct opt_command *cmd)
{
    size_t n = 0;
    while (cmd->opts[n].name)
        n++;
    return n;
}

static int set_value(const struct opt_command *cmd, const struct opt_def *d, void *out,
                     const char *text)
{
    char err[256];
    char *field = (char *)out + d->offset;
    int rc = 0;
    switch (d->type) {
    case OPT_FLAG:
        *(bool *)field = strcmp(text, "0") != 0 && strcmp(text, "false") != 0;
        break;
    case OPT_STRING: {
        char **s = (char **)field;
        free(*s);
        *s = strdup(text);
        break;
    }
    case OPT_UINT:
        rc = parse_uint(text, (uint64_t *)field, err, sizeof err);
        break;
    case OPT_DOUBLE:
        rc = parse_double(text, (double *)field, err, sizeof err);
        break;
    case OPT_SIZE:
        rc = parse_size(text, (uint64_t *)field, err, sizeof err);
        break;
    case OPT_SIZE_LIST:
    case OPT_UINT_LIST: {
        struct u64_list *l = (struct u64_list *)field;
        u64_list_free(l);
        rc = d->type == OPT_SIZE_LIST ? parse_size_list(text, l, err, sizeof err)
                                      : parse_uint_list(text, l, err, sizeof err);
        break;
    }
    case OPT_DURATION:
        rc = parse_duration(text, (double *)field, err, sizeof err);
        break;
    }
    if (rc != 0)
        fb_error("%s --%s: %s", cmd->name, d->name, err);
    return rc;
}

int opts_parse(const struct opt_command *cmd, void *out, int argc, char **argv,
               char **positional, int *n_positional)
{
    size_t nopts = count_opts(cmd);
    if (nopts > MAX_OPTS) {
        fb_error("internal: command %s declares too many options", cmd->name);
        return -1;
    }
    given_for = out;
    memset(given, 0, sizeof given);
    for (size_t i = 0; i < nopts; i++)
        if (cmd->opts[i].def && set_value(cmd, &cmd->opts[i], out, cmd->opts[i].def) != 0)
            return -1;
    int npos = 0;
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            opts_print_help(cmd, stdout);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            if (npos >= cmd->max_positional) {
                fb_error("%s: unexpected argument '%s' (see flashbed %s --help)", cmd->name,
                         arg, cmd->name);
                return -1;
            }
            positional[npos++] = argv[a];
            continue;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt_def *d = NULL;
        size_t idx = 0;
        for (; idx < nopts; idx++)
            if (strlen(cmd->opts[idx].name) == len && strncmp(cmd->opts[idx].name, name, len) == 0) {
                d = &cmd->opts[idx];
                break;
            }
        if (!d) {
            fb_error("%s: unknown option '%.*s' (see flashbed %s --help)", cmd->name,
                     (int)(len + 2), arg, cmd->name);
            return -1;
        }
        const char *value;
        if (d->type == OPT_FLAG) {
            if (eq) {
                fb_error("%s: option --%s takes no value", cmd->name, d->name);
                return -1;
            }
            value = "1";
        } else if (eq) {
            value = eq + 1;
        } else if (a + 1 < argc) {
            value = argv[++a];
        } else {
            fb_error("%s: option --%s needs a value (%s)", cmd->name, d->name,
                     d->metavar ? d->metavar : "VALUE");
            return -1;
        }
        if (set_value(cmd, d, out, value) != 0)
            return -1;
        given[idx] = true;
    }
    if (n_positional)
        *n_positional = npos;
    return 0;
}

void opts_free(const struct opt_command *cmd, void *out)
{
    for (const struct opt_def *d = cmd->opts; d->name; d++) {
        char *field = (char *)out + d->offset;
        if (d->type == OPT_STRING) {
            free(*(char **)field);
            *(char **)field = NULL;
        } else if (d->type == OPT_SIZE_LIST || d->type == OPT_UINT_LIST) {
            u64_list_free((struct u64_list *)field);
        }
    }
}

void opts_print_help(const struct opt_command *cmd, FILE *f)
{
    fprintf(f, "usage: flashbed %s %s\n\n%s\n\noptions:\n", cmd->name, cmd->usage, cmd->summary);
    for (const struct opt_def *d = cmd->opts; d->name; d++) {
        char left[64];
        if (d->type == OPT_FLAG)
            snprintf(left, sizeof left, "--%s", d->name);
        else
            snprintf(left, sizeof left, "--%s %s", d->name, d->metavar ? d->metavar : "VALUE");
        fprintf(f, "  %-26s %s", left, d->help);
        if (d->def && d->type != OPT_FLAG)
            fprintf(f, " [default: %s]", d->def);
        fputc('\n', f);
    }
    fprintf(f, "  %-26s %s\n", "--help", "show this help");
}

cJSON *opts_to_json(const struct opt_command *cmd, const void *values)
{
    cJSON *o = cJSON_CreateObject();
    for (const struct opt_def *d = cmd->opts; d->name; d++) {
        const char *field = (const char *)values + d->offset;
        switch (d->type) {
        case OPT_FLAG:
            cJSON_AddBoolToObject(o, d->name, *(const bool *)field);
            break;
        case OPT_STRING: {
            const char *s = *(char *const *)field;
            if (s)
                cJSON_AddStringToObject(o, d->name, s);
            else
                cJSON_AddNullToObject(o, d->name);
            break;
        }
        case OPT_UINT:
        case OPT_SIZE:
            cJSON_AddNumberToObject(o, d->name, (double)*(const uint64_t *)field);
            break;
        case OPT_DOUBLE:
        case OPT_DURATION:
            cJSON_AddNumberToObject(o, d->name, *(const double *)field);
            break;
        case OPT_SIZE_LIST:
        case OPT_UINT_LIST: {
            const struct u64_list *l = (const struct u64_list *)field;
            cJSON *arr = cJSON_AddArrayToObject(o, d->name);
            for (size_t i = 0; i < l->n; i++)
                cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)l->v[i]));
            break;
        }
        }
    }
    return o;
}

bool opts_given(const struct opt_command *cmd, const void *values, const char *name)
{
    if (values != given_for)
        return false;
    for (size_t i = 0; cmd->opts[i].name; i++)
        if (strcmp(cmd->opts[i].name, name) == 0)
            return given[i];
    return false;
}
