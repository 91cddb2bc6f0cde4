#include "common/options.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/parse.h"
#include "common/suggest.h"

/* Which options the user gave, kept beside the values so that commands can
 * tell "--size 4G" from the default; indexed by an option's place among all
 * the command's options. One command at a time is enough for a CLI. */
#define MAX_OPTS OPT_MAX_OPTS

/* One parse: the command, the struct it fills, and where its error goes. */
struct parse {
    const struct opt_command *cmd;
    void *out;
    char *err;
    size_t errlen;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail(struct parse *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Table t of the command (its own `opts` first); false past the last. */
static bool table_at(const struct opt_command *cmd, size_t t, struct opt_table *out)
{
    if (cmd->opts) {
        if (t == 0) {
            *out = (struct opt_table){cmd->opts, 0};
            return true;
        }
        t--;
    }
    /* tables[t - 1] existed, so tables[t] is a table or the end marker */
    if (!cmd->tables || !cmd->tables[t].opts)
        return false;
    *out = cmd->tables[t];
    return true;
}

/* A place in the walk over every option of a command, in --help order. */
struct opt_pos {
    const struct opt_def *d; /* the option */
    size_t base;             /* its table's offset in the command's struct */
    size_t index;            /* its place among all the command's options */
    size_t table, row;
    bool started;
};

/* Moves p to the command's next option; false after the last. Use as
 * for (struct opt_pos p = {0}; next_opt(cmd, &p);). */
static bool next_opt(const struct opt_command *cmd, struct opt_pos *p)
{
    if (p->started) {
        p->row++;
        p->index++;
    }
    p->started = true;
    struct opt_table t;
    for (; table_at(cmd, p->table, &t); p->table++, p->row = 0)
        if (t.opts[p->row].name) {
            p->d = &t.opts[p->row];
            p->base = t.base;
            return true;
        }
    return false;
}

/* The option's default for this command: its own override, else the table's. */
static const char *default_of(const struct opt_command *cmd, const struct opt_def *d)
{
    for (const struct opt_default *o = cmd->defaults; o && o->name; o++)
        if (strcmp(o->name, d->name) == 0)
            return o->def;
    return d->def;
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
 * user typed and "the default " for the default. */
static int check_number(struct parse *p, const struct opt_def *d, double v, const char *origin)
{
    if (!has_range(d) || in_range(d, v))
        return 0;
    char val[32], range[96];
    format_number(d, v, val, sizeof val);
    range_text(d, range, sizeof range);
    return fail(p, "%s --%s: %s%s is out of range (%s%s)", p->cmd->name, d->name, origin, val,
                is_list(d) ? "each " : "", range);
}

static int check_value(struct parse *p, const struct opt_def *d, const char *field, const char *origin)
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
        return fail(p, "%s --%s: %s %s '%s'%s (expected %s)", p->cmd->name, d->name,
                    *origin ? "the default" : "unknown", d->name, s, *origin ? " is not allowed" : "", list);
    }
    case OPT_UINT:
    case OPT_SIZE:
        return check_number(p, d, (double)*(const uint64_t *)field, origin);
    case OPT_DOUBLE:
    case OPT_DURATION:
        return check_number(p, d, *(const double *)field, origin);
    case OPT_SIZE_LIST:
    case OPT_UINT_LIST: {
        const struct u64_list *l = (const struct u64_list *)field;
        for (size_t i = 0; i < l->n; i++)
            if (check_number(p, d, (double)l->v[i], origin) != 0)
                return -1;
        return 0;
    }
    }
    return 0;
}

static bool declared_twice(const struct opt_command *cmd, const struct opt_pos *at)
{
    for (struct opt_pos q = {0}; next_opt(cmd, &q) && q.index < at->index;)
        if (strcmp(q.d->name, at->d->name) == 0)
            return true;
    return false;
}

static bool has_option(const struct opt_command *cmd, const char *name)
{
    for (struct opt_pos q = {0}; next_opt(cmd, &q);)
        if (strcmp(q.d->name, name) == 0)
            return true;
    return false;
}

/* Mistakes in the tables themselves, which no user input could fix. */
static int check_tables(struct parse *p)
{
    const struct opt_command *cmd = p->cmd;
    struct opt_pos at = {0};
    while (next_opt(cmd, &at)) {
        const struct opt_def *d = at.d;
        bool numeric = d->type != OPT_FLAG && d->type != OPT_STRING;
        if ((has_range(d) && (!numeric || !(d->max > d->min))) ||
            (d->allowed && d->type != OPT_STRING && !(d->type == OPT_UINT && d->min >= 1)))
            return fail(p, "internal: %s --%s declares a range or allowed values its type cannot have",
                        cmd->name, d->name);
        if (declared_twice(cmd, &at))
            return fail(p, "internal: %s declares --%s twice", cmd->name, d->name);
    }
    if (at.index > MAX_OPTS)
        return fail(p, "internal: command %s declares too many options", cmd->name);
    for (const struct opt_default *o = cmd->defaults; o && o->name; o++)
        if (!has_option(cmd, o->name))
            return fail(p, "internal: %s sets a default for --%s, an option it does not have", cmd->name,
                        o->name);
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
        return d->percent ? parse_share(text, (double *)field, err, errlen)
                          : parse_double(text, (double *)field, err, errlen);
    case OPT_SIZE: /* an amount of memory or disk: "25" needs its unit */
        return parse_size_with_unit(text, d->unit_guess ? d->unit_guess : "G", (uint64_t *)field, err, errlen);
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

/* An OPT_UINT row's word ("auto") for 0 (options.h). */
static bool is_uint_word(const struct opt_def *d, const char *text)
{
    return d->type == OPT_UINT && d->allowed && strcmp(text, d->allowed) == 0;
}

static int set_value(struct parse *p, const struct opt_pos *at, const char *text, const char *origin)
{
    char err[256];
    char *field = (char *)p->out + at->base + at->d->offset;
    if (is_uint_word(at->d, text)) {
        *(uint64_t *)field = 0;
        return 0;
    }
    if (parse_text(at->d, field, text, err, sizeof err) != 0)
        return fail(p, "%s --%s: %s%s", p->cmd->name, at->d->name, origin, err);
    return check_value(p, at->d, field, origin);
}

/* The option named name[0..len), or with len 0 the one whose short name is
 * `c`; false when there is none. */
static bool find_opt(const struct opt_command *cmd, const char *name, size_t len, char c, struct opt_pos *at)
{
    *at = (struct opt_pos){0};
    while (next_opt(cmd, at))
        if (len ? strlen(at->d->name) == len && strncmp(at->d->name, name, len) == 0
                : at->d->short_name && at->d->short_name == c)
            return true;
    return false;
}

/* The value of option d at argv[*a] ("--name=v" or "--name v", which
 * advances *a); NULL with the error set. */
static const char *take_value(struct parse *p, const struct opt_def *d, const char *eq, int argc, char **argv,
                              int *a)
{
    if (d->type == OPT_FLAG) {
        if (eq)
            fail(p, "%s: option --%s takes no value", p->cmd->name, d->name);
        return eq ? NULL : "1";
    }
    if (eq)
        return eq + 1;
    if (*a + 1 < argc)
        return argv[++*a];
    fail(p, "%s: option --%s needs a value (%s)", p->cmd->name, d->name, d->metavar ? d->metavar : "VALUE");
    return NULL;
}

/* The parsed struct's record of what was given (cmd->keeps_given). */
static struct opt_given *given_of(struct parse *p)
{
    return (struct opt_given *)((char *)p->out + p->cmd->given);
}

static void mark_given(struct parse *p, size_t index)
{
    if (p->cmd->keeps_given)
        given_of(p)->set[index] = true;
}

/* Table checks, then every default. */
static int parse_start(struct parse *p)
{
    if (check_tables(p) != 0)
        return -1;
    if (p->cmd->keeps_given)
        memset(given_of(p), 0, sizeof(struct opt_given));
    for (struct opt_pos at = {0}; next_opt(p->cmd, &at);) {
        const char *def = default_of(p->cmd, at.d);
        if (def && set_value(p, &at, def, "the default ") != 0)
            return -1;
    }
    return 0;
}

/* argv[*a] as an option: "--name", "--name=value" or a declared "-c";
 * false when it is a bare argument. */
static bool is_option(const char *arg, bool prefix)
{
    if (strncmp(arg, "--", 2) == 0)
        return arg[2] != '\0';
    /* short names are the subcommand's, never flashbed's own */
    return !prefix && arg[0] == '-' && arg[1] != '\0' && arg[2] == '\0';
}

/* The names of the command's options into names[] (at most max); how many. */
static size_t option_names(const struct opt_command *cmd, const char **names, size_t max)
{
    size_t n = 0;
    for (struct opt_pos q = {0}; next_opt(cmd, &q) && n < max;)
        names[n++] = q.d->name;
    return n;
}

/* One of the global options (cmd->before_command) named word, or nearest it. */
static const char *global_named(const struct opt_command *cmd, const char *word, bool *exact)
{
    const char *names[OPT_MAX_OPTS];
    size_t n = 0;
    for (const struct opt_def *d = cmd->before_command; d && d->name && n < OPT_MAX_OPTS; d++) {
        if (strcmp(d->name, word) == 0) {
            *exact = true;
            return d->name;
        }
        names[n++] = d->name;
    }
    *exact = false;
    return suggest_nearest(word, names, n);
}

/* The error for "--name" that the command does not declare: a global option
 * given after the command says where it goes; a typo gets the option it
 * most likely meant. */
static int unknown_option(struct parse *p, const char *name, size_t len, bool prefix)
{
    char word[SUGGEST_MAX_LEN + 1], hint[160] = "";
    snprintf(word, sizeof word, "%.*s", (int)len, name);
    const char *names[OPT_MAX_OPTS + 1];
    size_t n = option_names(p->cmd, names, OPT_MAX_OPTS);
    names[n++] = "help"; /* every command's, outside its table */
    const char *near = suggest_nearest(word, names, n);
    bool exact = false;
    const char *global = near ? NULL : global_named(p->cmd, word, &exact);
    if (exact)
        return fail(p, "%s: --%s is a global option: it goes before the command (flashbed --%s ... %s ...)",
                    p->cmd->name, global, global, p->cmd->name);
    if (near)
        snprintf(hint, sizeof hint, "; did you mean --%s?", near);
    else if (global)
        snprintf(hint, sizeof hint, "; did you mean the global option --%s? (it goes before the command)", global);
    else if (prefix)
        snprintf(hint, sizeof hint, "; a command's own options go after the command (flashbed COMMAND --%s)", word);
    if (prefix) /* flashbed's own options, before the subcommand */
        return fail(p, "unknown option '--%.*s' before the command%s (see flashbed --help)", (int)len, name, hint);
    return fail(p, "%s: unknown option '--%.*s'%s (see flashbed %s --help)", p->cmd->name, (int)len, name, hint,
                p->cmd->name);
}

/* One option at argv[*a] (advancing *a past its value). 0, or -1 with the
 * error set; *bare when it turned out to be a bare argument ("-x" that no
 * option declares). */
static int parse_option(struct parse *p, int argc, char **argv, int *a, bool prefix, bool *bare)
{
    const char *arg = argv[*a];
    struct opt_pos at;
    *bare = false;
    if (arg[1] != '-') {
        if (!find_opt(p->cmd, NULL, 0, arg[1], &at)) {
            *bare = true;
            return 0;
        }
        const char *value = take_value(p, at.d, NULL, argc, argv, a);
        if (!value || set_value(p, &at, value, "") != 0)
            return -1;
        mark_given(p, at.index);
        return 0;
    }
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    if (!find_opt(p->cmd, name, len, 0, &at))
        return unknown_option(p, name, len, prefix);
    const char *value = take_value(p, at.d, eq, argc, argv, a);
    if (!value || set_value(p, &at, value, "") != 0)
        return -1;
    mark_given(p, at.index);
    return 0;
}

/* argv[1..]: bare arguments go to positional[], or with `next` end the
 * parse there. 0, 1 for --help, -1 on a bad option. */
static int parse_args(struct parse *p, int argc, char **argv, char **positional, int *n_positional, int *next)
{
    int npos = 0, a = 1;
    for (; a < argc; a++) {
        const char *arg = argv[a];
        bool help = strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
        bool bare = !is_option(arg, next != NULL);
        /* before a subcommand, help and the subcommand are the caller's */
        if (next && (help || bare))
            break;
        if (help)
            return 1;
        if (!bare && parse_option(p, argc, argv, &a, next != NULL, &bare) != 0)
            return -1;
        if (!bare)
            continue;
        if (npos >= p->cmd->max_positional)
            return fail(p, "%s: unexpected argument '%s' (see flashbed %s --help)", p->cmd->name, arg,
                        p->cmd->name);
        positional[npos++] = argv[a];
    }
    if (n_positional)
        *n_positional = npos;
    if (next)
        *next = a;
    return 0;
}

int opts_parse(const struct opt_command *cmd, void *out, int argc, char **argv,
               char **positional, int *n_positional, char *err, size_t errlen)
{
    struct parse p = {cmd, out, err, errlen};
    if (parse_start(&p) != 0)
        return -1;
    return parse_args(&p, argc, argv, positional, n_positional, NULL);
}

int opts_parse_prefix(const struct opt_command *cmd, void *out, int argc, char **argv, int *next,
                      char *err, size_t errlen)
{
    struct parse p = {cmd, out, err, errlen};
    if (parse_start(&p) != 0)
        return -1;
    return parse_args(&p, argc, argv, NULL, NULL, next);
}

void opts_free(const struct opt_command *cmd, void *out)
{
    for (struct opt_pos at = {0}; next_opt(cmd, &at);) {
        char *field = (char *)out + at.base + at.d->offset;
        if (at.d->type == OPT_STRING) {
            free(*(char **)field);
            *(char **)field = NULL;
        } else if (is_list(at.d)) {
            u64_list_free((struct u64_list *)field);
        }
    }
}

/* " [range: 1 to 4096]", " [one of: f32|f16|bf16]" or nothing. */
static void constraint_text(const struct opt_def *d, char *buf, size_t len)
{
    char range[96];
    buf[0] = '\0';
    if (d->allowed && d->type == OPT_UINT) {
        range_text(d, range, sizeof range);
        snprintf(buf, len, " [range: %s, or %s]", range, d->allowed);
    } else if (d->allowed) {
        snprintf(buf, len, " [one of: %s]", d->allowed);
    } else if (has_range(d)) {
        range_text(d, range, sizeof range);
        snprintf(buf, len, " [%s: %s]", is_list(d) ? "each" : "range", range);
    }
}

static void print_option(const struct opt_def *d, const char *def, FILE *f)
{
    char left[64], constraint[300];
    if (d->type == OPT_FLAG)
        snprintf(left, sizeof left, "--%s", d->name);
    else
        snprintf(left, sizeof left, "--%s %s", d->name, d->metavar ? d->metavar : "VALUE");
    constraint_text(d, constraint, sizeof constraint);
    fprintf(f, "  %-26s %s", left, d->help);
    if (d->short_name)
        fprintf(f, " (also -%c)", d->short_name);
    /* a help that states its default itself ("[default: all cores]", for a
     * table default that stands for it) says it once: the table's is not added */
    if (def && d->type != OPT_FLAG && !strstr(d->help, "[default"))
        fprintf(f, " [default: %s]", def);
    fprintf(f, "%s\n", constraint);
}

void opts_print_options(const struct opt_def *opts, FILE *f)
{
    for (const struct opt_def *d = opts; d->name; d++)
        print_option(d, d->def, f);
}

void opts_print_help(const struct opt_command *cmd, FILE *f)
{
    fprintf(f, "usage: flashbed %s %s\n\n%s\n\noptions:\n", cmd->name, cmd->usage, cmd->summary);
    for (struct opt_pos at = {0}; next_opt(cmd, &at);)
        print_option(at.d, default_of(cmd, at.d), f);
    fprintf(f, "  %-26s %s\n", "--help", "show this help");
}

static void add_json(cJSON *o, const struct opt_def *d, const char *field)
{
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
        if (d->allowed && *(const uint64_t *)field == 0)
            cJSON_AddStringToObject(o, d->name, d->allowed);
        else
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

cJSON *opts_to_json(const struct opt_command *cmd, const void *values)
{
    cJSON *o = cJSON_CreateObject();
    for (struct opt_pos at = {0}; next_opt(cmd, &at);)
        add_json(o, at.d, (const char *)values + at.base + at.d->offset);
    return o;
}

bool opts_given(const struct opt_command *cmd, const void *values, const char *name)
{
    struct opt_pos at;
    if (!cmd->keeps_given || !find_opt(cmd, name, strlen(name), 0, &at))
        return false;
    return ((const struct opt_given *)((const char *)values + cmd->given))->set[at.index];
}
