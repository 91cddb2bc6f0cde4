/* The fault engine's rules: see io_fault.h for the spec and the contract. */
#include "io/io_fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/parse.h"
#include "common/rng.h"

/* The rule kinds as data: a name and whether it takes a time. */
static const struct {
    const char *name;
    enum io_fault_kind kind;
    bool takes_time;
} kinds[] = {
    {"eio", IO_FAULT_EIO, false},
    {"short", IO_FAULT_SHORT, false},
    {"delay", IO_FAULT_DELAY, true},
};

const char *io_fault_kind_name(enum io_fault_kind k)
{
    return k < IO_FAULT_KINDS ? kinds[k].name : "?";
}

/* TIME of a delay rule, in [0, IO_FAULT_MAX_DELAY_S]. */
static int parse_time(const char *rule, const char *text, uint64_t *ns, char *err, size_t errlen)
{
    double s;
    char why[256];
    if (parse_duration(text, &s, why, sizeof why) != 0)
        return err_set(err, errlen, "fault rule '%s': %s", rule, why);
    if (s > IO_FAULT_MAX_DELAY_S)
        return err_set(err, errlen, "fault rule '%s': delay %s is over %g s", rule, text, IO_FAULT_MAX_DELAY_S);
    *ns = (uint64_t)(s * 1e9 + 0.5);
    return 0;
}

/* "RATE[:TIME]" after "kind:". */
static int parse_rate(const char *rule, char *args, bool takes_time, struct io_fault_rule *r, char *err,
                      size_t errlen)
{
    char *time = strchr(args, ':');
    if (time)
        *time++ = '\0';
    if (takes_time != (time != NULL))
        return err_set(err, errlen, "fault rule '%s': %s", rule,
                       takes_time ? "a delay takes a rate and a time (delay:0.05:200us)"
                                  : "takes one rate (eio:0.01)");
    char why[256];
    if (parse_double(args, &r->rate, why, sizeof why) != 0 || r->rate < 0 || r->rate > 1)
        return err_set(err, errlen, "fault rule '%s': the rate must be a number in [0, 1], not '%s'", rule, args);
    return time ? parse_time(rule, time, &r->delay_ns, err, errlen) : 0;
}

/* "OFFSET[:TIME][/N]" after "kind@". */
static int parse_offset(const char *rule, char *args, bool takes_time, struct io_fault_rule *r, char *err,
                        size_t errlen)
{
    r->at_offset = true;
    r->times = 1;
    char *times = strchr(args, '/');
    if (times) {
        *times++ = '\0';
        uint64_t n;
        char why[256];
        if (parse_uint(times, &n, why, sizeof why) != 0 || n < 1 || n > IO_FAULT_MAX_TIMES)
            return err_set(err, errlen, "fault rule '%s': /N must be 1..%d attempts, not '%s'", rule,
                           IO_FAULT_MAX_TIMES, times);
        r->times = (unsigned)n;
    }
    char *time = strchr(args, ':');
    if (time)
        *time++ = '\0';
    if (takes_time != (time != NULL))
        return err_set(err, errlen, "fault rule '%s': %s", rule,
                       takes_time ? "a delay at an offset takes a time (delay@4096:1ms)" : "takes no time");
    char why[256];
    if (parse_size(args, &r->offset, why, sizeof why) != 0)
        return err_set(err, errlen, "fault rule '%s': the offset: %s", rule, why);
    return time ? parse_time(rule, time, &r->delay_ns, err, errlen) : 0;
}

/* One rule: "kind:..." or "kind@...". */
static int parse_rule(const char *text, struct io_fault_rule *r, char *err, size_t errlen)
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf)
        return err_set(err, errlen, "fault rule '%.40s...' is too long", text);
    size_t name_len = strcspn(buf, ":@");
    char sep = buf[name_len];
    buf[name_len] = '\0';
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (strcmp(buf, kinds[k].name) != 0)
            continue;
        memset(r, 0, sizeof *r);
        r->kind = kinds[k].kind;
        if (sep == ':')
            return parse_rate(text, buf + name_len + 1, kinds[k].takes_time, r, err, errlen);
        if (sep == '@')
            return parse_offset(text, buf + name_len + 1, kinds[k].takes_time, r, err, errlen);
        return err_set(err, errlen, "fault rule '%s': expected %s:RATE or %s@OFFSET", text, buf, buf);
    }
    return err_set(err, errlen, "fault rule '%s': unknown kind '%s' (eio, short, delay)", text, buf);
}

int io_fault_parse(const char *text, uint64_t seed, struct io_fault_spec *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->seed = seed;
    if (!text || !*text)
        return 0;
    size_t n;
    char **items = split_commas(text, &n);
    if (!items)
        return err_set(err, errlen, "out of memory");
    int rc = 0;
    if (n > IO_FAULT_MAX_RULES)
        rc = err_set(err, errlen, "%zu fault rules: at most %d", n, IO_FAULT_MAX_RULES);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = parse_rule(items[i], &out->rules[out->n_rules++], err, errlen);
    free(items);
    return rc;
}

/* A uniform number in [0, 1) for (seed, offset, attempt, rule): the same
 * every time it is asked. */
static double draw(uint64_t seed, uint64_t offset, unsigned attempt, unsigned rule)
{
    uint64_t x = seed ^ (offset * 0x9e3779b97f4a7c15ull);
    uint64_t h = rng_splitmix(&x);
    x = h ^ ((uint64_t)attempt << 32 | rule);
    h = rng_splitmix(&x);
    return (double)(h >> 11) * 0x1.0p-53;
}

static bool rule_hits(struct io_fault *f, unsigned i, uint64_t offset, uint64_t len, unsigned attempt)
{
    const struct io_fault_rule *r = &f->spec.rules[i];
    if (r->at_offset)
        return r->offset >= offset && r->offset - offset < len && atomic_fetch_add(&f->offset_seen[i], 1) < r->times;
    return r->rate > 0 && draw(f->spec.seed, offset, attempt, i) < r->rate;
}

void io_fault_decide(struct io_fault *f, uint64_t offset, uint64_t len, unsigned attempt, struct io_fault_choice *c)
{
    memset(c, 0, sizeof *c);
    const struct io_fault_spec *s = &f->spec;
    for (unsigned i = 0; i < s->n_rules; i++) {
        if (!rule_hits(f, i, offset, len, attempt))
            continue;
        const struct io_fault_rule *r = &s->rules[i];
        if (r->kind == IO_FAULT_EIO)
            c->eio = true;
        else if (r->kind == IO_FAULT_SHORT)
            c->short_read = true;
        else
            c->delay_ns += r->delay_ns;
    }
    if (c->eio)
        c->short_read = false;
}

void io_fault_init(struct io_fault *f, const struct io_fault_spec *spec)
{
    f->spec = *spec;
    atomic_init(&f->attempts, 0);
    for (int i = 0; i < IO_FAULT_MAX_RULES; i++)
        atomic_init(&f->offset_seen[i], 0);
    for (int k = 0; k < IO_FAULT_KINDS; k++)
        atomic_init(&f->injected[k], 0);
}

void io_fault_counts(const struct io_fault *f, struct io_fault_counts *out)
{
    memset(out, 0, sizeof *out);
    if (!f)
        return;
    out->attempts = atomic_load((atomic_uint_fast64_t *)&f->attempts);
    for (int k = 0; k < IO_FAULT_KINDS; k++)
        out->injected[k] = atomic_load((atomic_uint_fast64_t *)&f->injected[k]);
}
