#include "common/options.h"

#include <math.h>
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

static bool has_range(const struct opt_def *d)
{
    return d->min != 0 || d->max != 0;
}

static bool is_list(const struct opt_def *d)
{
    return d->type == OPT_SIZE_LIST || d->type == OPT_UINT_LIST;
}

/* A bound or value as the user would type it: sizes as "4k", whole numbers
 * without an exponent. */
static void format_number(const struct opt_def *d, double v, char *buf, size_t len)
{
    if ((d->type == OPT_SIZE || d->type == OPT_SIZE_LIST) && v >= 0 && v < 0x1p63)
        format_size((uint64_t)v, buf, len);
    else if (v == floor(v) && fabs(v) < 0x1p53)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%g", v);
}

/* "1 to 4096", "0 to under 1", "at least 1". */
static void range_text(const struct opt_def *d, char *buf, size_t len)
{
    char lo[32], hi[32];
    format_number(d, d->min, lo, sizeof lo);
    format_number(d, d->max, hi, sizeof hi);
    if (d->max == OPT_NO_MAX)
        snprintf(buf, len, "at least %s", lo);
    else
        snprintf(buf, len, "%s to %s%s", lo, d->max_open ? "under " : "", hi);
}

static bool in_range(const struct opt_def *d, double v)
{
    return v >= d->min && (d->max_open ? v < d->max : v <= d->max);
}

/* Whether `s` is one of the '|'-separated `allowed`. */
static bool allowed_has(const char *allowed, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = allowed;;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0)
            return true;
        if (!bar)
            return false;
        p = bar + 1;
    }
}

/* "f32|f16|bf16" -> "'f32', 'f16' or 'bf16'". */
static void allowed_text(const char *allowed, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const char *p = allowed; used < len;) {
        const char *bar = strchr(p, '|');
        int n = bar ? (int)(bar - p) : (int)strlen(p);
        const char *sep = p == allowed ? "" : bar ? ", " : " or ";
        used += (size_t)snprintf(buf + used, len - used, "%s'%.*s'", sep, n, p);
        if (!bar)
            break;
        p = bar + 1;
    }
}

/* A parsed value against the row's constraints; `origin` is "" for what the
 * user typed and "the default " for the table's own default. */
static int check_number(const struct opt_command *cmd, const struct opt_def *d, double v,
                        const char *origin)
{
    if (!has_range(d) || in_range(d, v))
        return 0;
    char val[32], range[96];
    format_number(d, v, val, sizeof val);
    range_text(d, range, sizeof range);
    fb_error("%s --%s: %s%s is out of range (%s%s)", cmd->name, d->name, origin, val,
             is_list(d) ? "each " : "", range);
    return -1;
}

static int check_value(const struct opt_command *cmd, const struct opt_def *d, const char *field,
                       const char *origin)
{
    switch (d->type) {
    case OPT_FLAG:
        return 0;
    case OPT_STRING: {
        const char *s = *(char *const *)field;
        if (!d->allowed || !s || allowed_has(d->allowed, s))
            return 0;
        char list[256];
        allowed_text(d->allowed, list, sizeof list);
        /* "unknown dtype 'f8'": the option's name says what kind of value it is */
        fb_error("%s --%s: %s %s '%s'%s (expected %s)", cmd->name, d->name, *origin ? "the default" : "unknown",
                 d->name, s, *origin ? " is not allowed" : "", list);
        return -1;
    }
    case OPT_UINT:
    case OPT_SIZE:
        return check_number(cmd, d, (double)*(const uint64_t *)field, origin);
    case OPT_DOUBLE:
    case OPT_DURATION:
        return check_number(cmd, d, *(const double *)field, origin);
    case OPT_SIZE_LIST:
    case OPT_UINT_LIST: {
        const struct u64_list *l = (const struct u64_list *)field;
        for (size_t i = 0; i < l->n; i++)
            if (check_number(cmd, d, (double)l->v[i], origin) != 0)
                return -1;
        return 0;
    }
    }
    return 0;
}

/* Mistakes in a table itself, which no user input could fix. */
static int check_table(const struct opt_command *cmd)
{
    for (const struct opt_def *d = cmd->opts; d->name; d++) {
        bool numeric = d->type != OPT_FLAG && d->type != OPT_STRING;
        if ((has_range(d) && (!numeric || !(d->max > d->min))) || (d->allowed && d->type != OPT_STRING)) {
            fb_error("internal: %s --%s declares a range or allowed values its type cannot have",
                     cmd->name, d->name);
            return -1;
        }
    }
    return 0;
}

static int parse_text(const struct opt_def *d, char *field, const char *text, char *err, size_t errlen)
{
    switch (d->type) {
    case OPT_FLAG:
        *(bool *)field = strcmp(text, "0") != 0 && strcmp(text, "false") != 0;
        return 0;
    case OPT_STRING: {
        char **s = (char **)field;
        free(*s);
        *s = strdup(text);
        return 0;
    }
    case OPT_UINT:
        return parse_uint(text, (uint64_t *)field, err, errlen);
    case OPT_DOUBLE:
        return parse_double(text, (double *)field, err, errlen);
    case OPT_SIZE:
        return parse_size(text, (uint64_t *)field, err, errlen);
    case OPT_SIZE_LIST:
    case OPT_UINT_LIST: {
        struct u64_list *l = (struct u64_list *)field;
        u64_list_free(l);
        return d->type == OPT_SIZE_LIST ? parse_size_list(text, l, err, errlen)
                                        : parse_uint_list(text, l, err, errlen);
    }
    case OPT_DURATION:
        return parse_duration(text, (double *)field, err, errlen);
    }
    return 0;
}

static int set_value(const struct opt_command *cmd, const struct opt_def *d, void *out,
                     const char *text, const char *origin)
{
    char err[256];
    char *field = (char *)out + d->offset;
    if (parse_text(d, field, text, err, sizeof err) != 0) {
        fb_error("%s --%s: %s%s", cmd->name, d->name, origin, err);
        return -1;
    }
    return check_value(cmd, d, field, origin);
}

static const struct opt_def *find_opt(const struct opt_command *cmd, const char *name, size_t len,
                                      size_t *idx)
{
    for (size_t i = 0; cmd->opts[i].name; i++)
        if (strlen(cmd->opts[i].name) == len && strncmp(cmd->opts[i].name, name, len) == 0) {
            *idx = i;
            return &cmd->opts[i];
        }
    return NULL;
}

/* The value of option d at argv[*a] ("--name=v" or "--name v", which
 * advances *a); NULL with the error printed. */
static const char *take_value(const struct opt_command *cmd, const struct opt_def *d, const char *eq,
                              int argc, char **argv, int *a)
{
    if (d->type == OPT_FLAG) {
        if (eq)
            fb_error("%s: option --%s takes no value", cmd->name, d->name);
        return eq ? NULL : "1";
    }
    if (eq)
        return eq + 1;
    if (*a + 1 < argc)
        return argv[++*a];
    fb_error("%s: option --%s needs a value (%s)", cmd->name, d->name, d->metavar ? d->metavar : "VALUE");
    return NULL;
}

/* Table checks, then every default. */
static int parse_start(const struct opt_command *cmd, void *out)
{
    if (count_opts(cmd) > MAX_OPTS) {
        fb_error("internal: command %s declares too many options", cmd->name);
        return -1;
    }
    if (check_table(cmd) != 0)
        return -1;
    given_for = out;
    memset(given, 0, sizeof given);
    for (const struct opt_def *d = cmd->opts; d->name; d++)
        if (d->def && set_value(cmd, d, out, d->def, "the default ") != 0)
            return -1;
    return 0;
}

/* argv[1..]: bare arguments go to positional[], or with `next` end the
 * parse there. 0, 1 after --help, -1 on a bad option. */
static int parse_args(const struct opt_command *cmd, void *out, int argc, char **argv,
                      char **positional, int *n_positional, int *next)
{
    int npos = 0, a = 1;
    for (; a < argc; a++) {
        const char *arg = argv[a];
        bool help = strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
        /* before a subcommand, help and the subcommand are the caller's */
        if (next && (help || strncmp(arg, "--", 2) != 0 || arg[2] == '\0'))
            break;
        if (help) {
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
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name), idx = 0;
        const struct opt_def *d = find_opt(cmd, name, len, &idx);
        if (!d) {
            if (next) /* flashbed's own options, before the subcommand */
                fb_error("unknown option '%.*s' before the command (see flashbed --help)", (int)(len + 2), arg);
            else
                fb_error("%s: unknown option '%.*s' (see flashbed %s --help)", cmd->name, (int)(len + 2), arg,
                         cmd->name);
            return -1;
        }
        const char *value = take_value(cmd, d, eq, argc, argv, &a);
        if (!value || set_value(cmd, d, out, value, "") != 0)
            return -1;
        given[idx] = true;
    }
    if (n_positional)
        *n_positional = npos;
    if (next)
        *next = a;
    return 0;
}

int opts_parse(const struct opt_command *cmd, void *out, int argc, char **argv,
               char **positional, int *n_positional)
{
    if (parse_start(cmd, out) != 0)
        return -1;
    return parse_args(cmd, out, argc, argv, positional, n_positional, NULL);
}

int opts_parse_prefix(const struct opt_command *cmd, void *out, int argc, char **argv, int *next)
{
    if (parse_start(cmd, out) != 0)
        return -1;
    return parse_args(cmd, out, argc, argv, NULL, NULL, next);
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

/* " [range: 1 to 4096]", " [one of: f32|f16|bf16]" or nothing. */
static void constraint_text(const struct opt_def *d, char *buf, size_t len)
{
    char range[96];
    buf[0] = '\0';
    if (d->allowed) {
        snprintf(buf, len, " [one of: %s]", d->allowed);
    } else if (has_range(d)) {
        range_text(d, range, sizeof range);
        snprintf(buf, len, " [%s: %s]", is_list(d) ? "each" : "range", range);
    }
}

void opts_print_options(const struct opt_def *opts, FILE *f)
{
    for (const struct opt_def *d = opts; d->name; d++) {
        char left[64], constraint[300];
        if (d->type == OPT_FLAG)
            snprintf(left, sizeof left, "--%s", d->name);
        else
            snprintf(left, sizeof left, "--%s %s", d->name, d->metavar ? d->metavar : "VALUE");
        constraint_text(d, constraint, sizeof constraint);
        fprintf(f, "  %-26s %s", left, d->help);
        if (d->def && d->type != OPT_FLAG)
            fprintf(f, " [default: %s]", d->def);
        fprintf(f, "%s\n", constraint);
    }
}

void opts_print_help(const struct opt_command *cmd, FILE *f)
{
    fprintf(f, "usage: flashbed %s %s\n\n%s\n\noptions:\n", cmd->name, cmd->usage, cmd->summary);
    opts_print_options(cmd->opts, f);
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
