/* Fuzzes the fault engine's rules (io/io_fault.c), as run --fault and
 * sweep --fault take them: the first 8 bytes are the seed, the rest the
 * text. What parses keeps the ranges io_fault.h promises (at most 16
 * rules, rates in [0, 1], delays up to 10 s, 1..1000 attempts), and its
 * choices over a few reads and attempts are made without fault; a refusal
 * says why. */
#include <stdlib.h>
#include <string.h>

#include "io/io_fault.h"
#include "fuzz_util.h"

static void check_spec(const struct io_fault_spec *s)
{
    if (s->n_rules > IO_FAULT_MAX_RULES)
        abort();
    for (unsigned i = 0; i < s->n_rules; i++) {
        const struct io_fault_rule *r = &s->rules[i];
        if (r->kind >= IO_FAULT_KINDS || (r->kind != IO_FAULT_DELAY && r->delay_ns) ||
            r->delay_ns > (uint64_t)(IO_FAULT_MAX_DELAY_S * 1e9 + 0.5) ||
            (r->at_offset ? r->times < 1 || r->times > IO_FAULT_MAX_TIMES : !(r->rate >= 0 && r->rate <= 1)))
            abort();
    }
}

/* Choices over reads around each offset rule and some others: a rate of 1
 * always hits, one of 0 never; EIO and a short read never together. */
static void check_choices(const struct io_fault_spec *s)
{
    static struct io_fault f;
    io_fault_init(&f, s);
    for (unsigned k = 0; k < 8; k++)
        for (unsigned attempt = 0; attempt < 2; attempt++) {
            struct io_fault_choice c;
            uint64_t off = k < s->n_rules && s->rules[k].at_offset ? s->rules[k].offset : (uint64_t)k * 4096;
            io_fault_decide(&f, off, 4096, attempt, &c);
            if (c.eio && c.short_read)
                abort();
            for (unsigned i = 0; i < s->n_rules; i++) {
                const struct io_fault_rule *r = &s->rules[i];
                if (!r->at_offset && r->kind == IO_FAULT_EIO && r->rate == 1 && !c.eio)
                    abort();
            }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = 0;
    size_t k = size < 8 ? size : 8;
    memcpy(&seed, data, k);
    char *text = fuzz_strndup(data + k, size - k);
    char err[512] = "";
    struct io_fault_spec s;
    int rc = io_fault_parse(text, seed, &s, err, sizeof err);
    if (rc == 0) {
        check_spec(&s);
        check_choices(&s);
    } else if (!err[0]) {
        abort(); /* a refusal says why */
    }
    fuzz_note(text, rc, err);
    free(text);
    return 0;
}
