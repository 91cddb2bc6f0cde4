/* fb_trace_copy IN OUT: rewrites a trace through the C reader and writer
 * (traces/trace.h), the reference the Python module's bytes are compared
 * with (tests/integration/python_roundtrip.sh): version 1 in, version 2
 * out, every set encoded by set_encode's choice. fb_trace_copy --read IN:
 * the reader alone, to the verified end (tools/bench-python-trace.sh's C
 * reading). Exit 0, or 1 with the reader's or writer's message on stderr. */
#include <stdio.h>
#include <string.h>

#include "traces/trace.h"

static int copy_tokens(struct trace_reader *r, struct trace_writer *w, const struct trace_meta *m, char *err,
                       size_t errlen)
{
    struct trace_token tok;
    int rc;
    while ((rc = trace_reader_next(r, &tok, err, errlen)) == 1) {
        if (trace_writer_begin_token(w, tok.flags, err, errlen) != 0)
            return -1;
        for (uint32_t l = 0; l < m->n_layers; l++) {
            if (m->has_channels &&
                trace_writer_layer_channels(w, l, tok.channels[l], tok.n_channels[l], err, errlen) != 0)
                return -1;
            if (trace_writer_layer(w, l, tok.active[l], tok.n_active[l], tok.pred ? tok.pred[l] : NULL,
                                   tok.pred ? tok.n_pred[l] : 0, err, errlen) != 0)
                return -1;
        }
    }
    return rc;
}

/* Every token of IN read and dropped; 0, or 1 with the message printed. */
static int read_only(const char *path)
{
    char err[512];
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    struct trace_token tok;
    int rc = r ? 1 : -1;
    while (rc == 1)
        rc = trace_reader_next(r, &tok, err, sizeof err);
    trace_reader_close(r);
    if (rc != 0)
        fprintf(stderr, "fb_trace_copy: %s\n", err);
    return rc != 0;
}

int main(int argc, char **argv)
{
    char err[512];
    if (argc == 3 && strcmp(argv[1], "--read") == 0)
        return read_only(argv[2]);
    if (argc != 3) {
        fprintf(stderr, "usage: fb_trace_copy IN OUT | fb_trace_copy --read IN\n");
        return 2;
    }
    struct trace_reader *r = trace_reader_open(argv[1], err, sizeof err);
    if (!r) {
        fprintf(stderr, "fb_trace_copy: %s\n", err);
        return 1;
    }
    const struct trace_meta *m = trace_reader_meta(r);
    struct trace_writer *w = trace_writer_open(NULL, argv[2], m, err, sizeof err);
    if (!w || copy_tokens(r, w, m, err, sizeof err) != 0) {
        fprintf(stderr, "fb_trace_copy: %s\n", err);
        trace_writer_abort(w);
        trace_reader_close(r);
        return 1;
    }
    trace_reader_close(r);
    if (trace_writer_close(w, err, sizeof err) != 0) {
        fprintf(stderr, "fb_trace_copy: %s\n", err);
        return 1;
    }
    return 0;
}
