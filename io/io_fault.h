/* The fault engine's rules (io/engine_fault.c): which reads fail with EIO,
 * come back short, or wait first, at given rates or at given offsets, in the
 * manner of fio's error-injecting engines. A rule set is parsed once at the
 * edge from one spec string and travels by pointer in the job
 * (io/ioengine.h's struct io_job), beside the counts of what was injected.
 *
 * Spec: comma-separated rules, each one of
 *   eio:RATE            every read attempt fails with EIO with probability RATE
 *   short:RATE          ... returns half its bytes (a short read)
 *   delay:RATE:TIME     ... waits TIME (200us, 1ms, 0.5s) before reading
 *   eio@OFFSET[/N]      the first N attempts (default 1) at reading file
 *   short@OFFSET[/N]    byte OFFSET (a size: 4096, 64k), counted over the
 *   delay@OFFSET:TIME[/N]  whole run, are hit that way: /1 is transient (the
 *                       retry succeeds, later reads too), /2 fails the
 *                       retry as well
 * RATE is in [0, 1], TIME in [0, 10 s], N in 1..1000, at most
 * IO_FAULT_MAX_RULES rules. Whether a rate hits an attempt is a pure
 * function of the seed, the read's offset and its attempt number (0 first,
 * 1 for the reader's retry), so a run injects the same faults whatever its
 * threads' order; an offset's rule counts the attempts at that offset.
 * EIO outranks a short read; a delay adds to either.
 *
 * Return convention: io_fault_parse is 0, or -1 with err naming the rule
 * and what is wrong. Threading: the spec is read-only once parsed; the
 * counts are atomics, bumped by every reader thread. */
#ifndef FLASHBED_IO_IO_FAULT_H
#define FLASHBED_IO_IO_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IO_FAULT_MAX_RULES 16
#define IO_FAULT_MAX_TIMES 1000
#define IO_FAULT_MAX_DELAY_S 10.0

enum io_fault_kind { IO_FAULT_EIO, IO_FAULT_SHORT, IO_FAULT_DELAY, IO_FAULT_KINDS };

struct io_fault_rule {
    enum io_fault_kind kind;
    bool at_offset;    /* at an offset (with times), else at a rate */
    double rate;       /* [0, 1] */
    uint64_t offset;   /* a file byte the read covers */
    unsigned times;    /* at_offset: the first `times` attempts are hit */
    uint64_t delay_ns; /* IO_FAULT_DELAY */
};

struct io_fault_spec {
    struct io_fault_rule rules[IO_FAULT_MAX_RULES];
    unsigned n_rules;
    uint64_t seed;
};

/* What the engine did to one attempt of one read. */
struct io_fault_choice {
    bool eio, short_read;
    uint64_t delay_ns;
};

/* A spec with the counts of what its engine injected. */
struct io_fault {
    struct io_fault_spec spec;
    atomic_uint_fast64_t offset_seen[IO_FAULT_MAX_RULES]; /* attempts at each offset rule's byte */
    atomic_uint_fast64_t attempts; /* reads the engine was given, retries included */
    atomic_uint_fast64_t injected[IO_FAULT_KINDS];
};

/* The counts at one moment (plain numbers). */
struct io_fault_counts {
    uint64_t attempts;
    uint64_t injected[IO_FAULT_KINDS];
};

/* text (NULL or "": no rules) with seed into *out. */
int io_fault_parse(const char *text, uint64_t seed, struct io_fault_spec *out, char *err, size_t errlen);
/* The choice for attempt `attempt` of the read of len bytes at offset
 * (each offset rule it covers counts one more attempt). */
void io_fault_decide(struct io_fault *f, uint64_t offset, uint64_t len, unsigned attempt, struct io_fault_choice *c);
/* f's counts zeroed, its spec a copy of spec. */
void io_fault_init(struct io_fault *f, const struct io_fault_spec *spec);
void io_fault_counts(const struct io_fault *f, struct io_fault_counts *out);
/* The fault engines' steps around a read attempt u of their base engine
 * (io/engine_fault.c, io/engine_fault_uring.c). Before it is handed on:
 * the attempt counted, a delay waited, an EIO set into u->result (true: u
 * is complete, failed, not to be handed on); *shorten: it is to come back
 * short. f NULL: nothing injected. */
struct io_unit;
bool io_fault_before_read(struct io_fault *f, struct io_unit *u, bool *shorten);
/* A read chosen to come back short, completed: half its bytes, counted (a
 * read that failed already is left as it is). */
void io_fault_shorten(struct io_fault *f, struct io_unit *u);

/* "eio", "short", "delay". */
const char *io_fault_kind_name(enum io_fault_kind k);

#endif
