/* Neuron sources behind one ops table (as cache/policy.h's policies): what
 * chooses the FFN neurons a token needs in a layer. Each source is its own
 * file, engine/ffn/source_<name>.c, defining source_<name>, and one line of
 * engine/ffn/sources.def; the build picks the file up by its name.
 *
 * Callers outside the source's own file ask the properties and call the
 * hooks below, never compare a source with another by identity or name:
 * a new source (a router choosing experts) is its file, its line (with
 * its --active names and run's help words: SELECT_ACTIVE_ALLOWED and
 * run's help are generated from them; test_neuron_source holds them to the
 * source's names) and its tests. A source that replays (the trace) has no
 * layer hook: its replay hook gives the flash FFN a token's recorded set
 * by the token's index, with the policy's known sets from the same trace.
 * The few places that name a source do so because they mean that very
 * source: the oracle as the truth beside another source (check,
 * record, a warm-up's profile), the trace behind --active trace:FILE.
 *
 * A source with its arguments travels as a value, struct select_config
 * (neuron_select.h): its ops and what it reads (a predictor, thresholds).
 * Text becomes a source at the edge: select_choice.h reads --active through
 * neuron_source_find; run's trace:FILE is the trace source with its file.
 * The tables are constant data; thread-safe. */
#ifndef FLASHBED_ENGINE_NEURON_SOURCE_H
#define FLASHBED_ENGINE_NEURON_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct cpu_kernels;
struct model;
struct neuron_select;
struct select_choice;
struct select_config;

/* Which thresholds file (flashbed sparsify calibrate) a source reads. */
enum source_file {
    SOURCE_FILE_NONE,     /* none: --sparsify refused */
    SOURCE_FILE_GLOBAL,   /* with --sparsify and no --threshold, the file's global threshold; under its
                           * cal_name the file's per-layer ones (the gate, gate-cal) */
    SOURCE_FILE_PER_LAYER /* always the file's per-layer thresholds, never --threshold (teal) */
};

/* What select_choice_open hands a source's choose hook: the options. */
struct source_args {
    const char *cmd;       /* the command, for messages ("run") */
    const char *name;      /* --active as given: the source's name or its cal_name */
    bool cal;              /* the name was cal_name, or the source reads per-layer thresholds only */
    bool threshold_given;  /* --threshold given */
    double threshold;
    const char *sparsify;  /* --sparsify FILE, or NULL */
};

struct neuron_source_ops {
    const char *name;      /* --active's name, run.json's active_source, a trace's source */
    const char *cal_name;  /* a second name under which it takes a thresholds file's per-layer
                            * thresholds ("gate-cal"), or NULL */
    enum source_file file; /* the thresholds file it reads */
    /* Properties: what callers ask instead of the name. */
    bool replays;          /* the sets are a recorded trace's, not computed (trace): known before the
                            * layer's input (read-ahead), and what a policy's known sets are */
    bool truth;            /* the choice is the true activations (oracle): --check has nothing to
                            * compare, its rows are the oracle's (not deployable), --threshold sets
                            * the density of SiLU and GELU FFNs */
    bool deployable;       /* a deployment has it (predictor, gate): what it holds and costs counts as
                            * the predictor's, its choice is recorded as the predicted sets beside the
                            * true ones, and it needs a policy that reads only what is chosen */
    bool reads_channels;   /* input sparsity (teal): chooses input channels too, the FFN computes on
                            * the kept ones (neuron_select.xs); on flash the transposed unit
                            * (engine/ffn/ffn_transposed.h) reads ffn_t.bin by channel */
    bool chooses_on_device;/* a device implementation chooses on the backend (predictor_dev.h) */
    const char *held_as;   /* deployable: what run.md calls what it holds ("predictor", "gate rows") */
    /* Hooks; optional unless said. */
    /* --active's logic for this source (select_choice.h), after the common checks: loads what it
     * reads into c (a predictor, a thresholds file) and sets c->cfg's arguments. 0, or -1 with err
     * the whole line. NULL: nothing to load (--threshold is already in c->cfg.threshold). */
    int (*choose)(const struct source_args *a, const struct model *m, struct select_choice *c, char *err,
                  size_t errlen);
    /* For people: the source, its threshold, what it holds and costs, into c->desc. Required for
     * sources select_choice_open takes. */
    void (*describe)(const struct model *m, struct select_choice *c);
    /* run.json's summary: the source's thresholds (the predictor's, the gate's). */
    void (*report)(const struct select_config *c, uint32_t n_layers, struct cJSON *summary);
    /* Whether c can choose m's neurons. 0, or -1 with err. Loads nothing. */
    int (*check)(const struct model *m, const struct select_config *c, char *err, size_t errlen);
    /* DRAM it holds for m (weights or rows; scratch aside), and its multiply-adds per token. */
    uint64_t (*bytes)(const struct model *m, const struct select_config *c);
    uint64_t (*madds)(const struct model *m, const struct select_config *c);
    /* Loads what it reads into s (s->m and s->cfg set, scratch z, g, xs allocated). 0, or -1 with err. */
    int (*open)(struct neuron_select *s, char *err, size_t errlen);
    /* Layer l's chosen neurons for FFN input x[d_model]: ascending ids into out[d_ff]; returns how
     * many. Required for a source that does not replay. */
    uint32_t (*layer)(struct neuron_select *s, int layer, struct cpu_kernels *k, const float *x, uint32_t *out);
    /* A source that replays: token t's recorded set of layer l, known before the layer's input,
     * from c's arguments (the trace): ascending ids into out[d_ff]; returns how many. t counts
     * every token the engine runs: past the recorded ones it starts over. Required for a source
     * that replays (and only there). */
    uint32_t (*replay)(const struct select_config *c, uint64_t t, int layer, uint32_t *out);
};

#define SOURCE(x, names, run_help) extern const struct neuron_source_ops source_##x;
#include "engine/ffn/sources.def"
#undef SOURCE

/* The source named name (its name or its cal_name: *cal says which), or
 * NULL. */
const struct neuron_source_ops *neuron_source_find(const char *name, bool *cal);

/* The names --active takes for the computed sources, each with its
 * cal_name after it, as "a, b, c or d" into buf. */
void neuron_source_names(char *buf, size_t len);

/* The same with `last` (NULL: none) as the final alternative: run's
 * "oracle, predictor, gate, gate-cal, teal or trace:FILE". */
void neuron_source_names_then(char *buf, size_t len, const char *last);

#endif
