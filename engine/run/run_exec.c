/* flashbed run's measuring loop and its recording (engine/run/run_exec.h). */
#include "engine/run/run_exec.h"

#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/ffn/ffn_transposed.h"
#include "engine/run/run_stop.h"

/* The loop's state, which decode_run's hooks share. */
struct exec {
    struct engine *e;
    const struct run_exec_config *c;
    struct run_outcome *out;
    struct backend_counts last; /* the backend's counts when the token began */
};

/* The trace being recorded learns where each token comes from. */
static void exec_before(void *ctx, int pos, bool generated)
{
    struct exec *x = ctx;
    ffn_flash_next_token(&x->e->ffn, (pos == 0 ? TRACE_TOKEN_SEQ_START : 0u) | (generated ? TRACE_TOKEN_GENERATED : 0u));
}

/* The flash FFN's costs of the last token into r; -1 when it failed, its
 * reason in out->error. */
static int take_flash_costs(struct exec *x, struct token_row *r)
{
    struct ffn_flash_token ft;
    ffn_flash_take_token(&x->e->ffn, &ft);
    r->io_ms = ft.io_ms;
    r->mem_ms = ft.mem_ms;
    r->ffn_ms = ft.ffn_ms;
    r->predictor_ms = ft.predictor_ms;
    r->bytes_read = (double)ft.bytes_read;
    r->reads = (double)ft.reads;
    r->io_requests = (double)ft.io_requests;
    r->read_retries = (double)ft.read_retries;
    r->verify_ms = ft.verify_ms;
    r->rows_verified = (double)ft.rows_verified;
    r->verify_retries = (double)ft.verify_retries;
    r->dram_bytes_read = (double)ft.dram_bytes_read;
    r->overflow_rows = (double)ft.overflow_rows;
    r->rows_inserted = (double)ft.rows_inserted;
    r->rows_deleted = (double)ft.rows_deleted;
    r->cache_rows = (double)ft.cache_rows;
    r->needed = (double)ft.needed;
    r->window_shrinks = ft.window_shrinks;
    r->check_ms = ft.check_ms;
    r->active = (double)ft.active;
    r->missed = (double)ft.missed;
    r->extra = (double)ft.extra;
    r->read_ms = ft.read_ms;
    r->layers_ahead = (double)ft.layers_ahead;
    r->h2d_ms = ft.h2d_ms;
    r->h2d_bytes = (double)ft.h2d_bytes;
    r->row_moves = (double)ft.row_moves;
    r->staged_groups = (double)ft.staged_groups;
    r->append_groups = (double)ft.append_groups;
    r->move_batches = (double)ft.move_batches;
    r->upload_runs = (double)ft.upload_runs;
    r->ring_waits = (double)ft.ring_waits;
    r->read_waits = (double)ft.read_waits;
    r->step_waits = (double)ft.step_waits;
    r->chan_bytes = (double)ft.chan_bytes;
    r->chan_reads = (double)ft.chan_reads;
    r->down_bytes = (double)ft.down_bytes;
    r->down_reads = (double)ft.down_reads;
    r->kept_channels = (double)ft.kept_channels;
    const char *err = ffn_flash_error(&x->e->ffn);
    return err ? err_set(x->out->error, sizeof x->out->error, "%s", err) : 0;
}

/* The backend's counts over the token (the pass ends with a sync: all
 * it enqueued has run). */
static void take_device_counts(struct exec *x, struct token_row *r)
{
    struct backend_counts c;
    x->e->be_ops->counts(x->e->be, &c);
    r->d2h_bytes = (double)(c.bytes_down - x->last.bytes_down);
    r->launches = (double)(c.launches - x->last.launches);
    r->syncs = (double)(c.syncs - x->last.syncs);
    r->copies = (double)(c.copies - x->last.copies);
    x->last = c;
}

/* The pass just computed refused when its answer would be wrong
 * (engine/run/run_stop.h): decode_run then fails, and nothing is written. */
static int exec_check(void *ctx, const struct decode_step *s, char *err, size_t errlen)
{
    struct exec *x = ctx;
    return run_stop_check(x->e, !x->c->dense, s->pos, s->token, err, errlen);
}

/* A row per computed position: the pass's time, the flash FFN's share of
 * it, and the rest as compute, of which attention is what no other part
 * claims. Non-zero (the flash FFN failed) stops decode_run. */
static int exec_token(void *ctx, const struct decode_step *s)
{
    struct exec *x = ctx;
    struct token_row *r = &x->out->rows[x->out->n_rows++];
    r->total_ms = (double)(s->end_ns - s->start_ns) * 1e-6;
    r->id = s->token;
    r->generated = s->generated;
    take_device_counts(x, r);
    if (!x->c->dense && take_flash_costs(x, r) != 0)
        return -1;
    r->compute_ms = r->total_ms - r->io_ms - r->mem_ms;
    r->attention_ms = r->compute_ms - r->ffn_ms - r->predictor_ms - r->check_ms;
    if (x->c->token)
        x->c->token(x->c->ctx, s, r);
    return 0;
}

int run_exec(struct engine *e, const struct run_exec_config *c, struct run_outcome *out, char *err,
             size_t errlen)
{
    *out = (struct run_outcome){0};
    const struct decode_config *d = &c->decode;
    /* decode_run refuses a negative n itself, and needs no rows to say so */
    size_t rows = (size_t)(d->n_prompt > 0 ? d->n_prompt : 0) + (size_t)(d->n > 0 ? d->n : 0);
    out->rows = calloc(rows ? rows : 1, sizeof *out->rows);
    if (!out->rows)
        return err_set(err, errlen, "cannot allocate the per-token rows");
    struct exec x = {.e = e, .c = c, .out = out};
    e->be_ops->counts(e->be, &x.last); /* what set-up uploaded is not a token's */
    struct decode_hooks h = {.before = c->dense ? NULL : exec_before, .token = exec_token, .check = exec_check,
                             .ctx = &x};
    struct decode_result res;
    if (decode_run(e, d, &h, &res, err, errlen) != 0) { /* nothing to report */
        free(out->rows);
        out->rows = NULL;
        out->n_rows = 0;
        return -1;
    }
    out->n_prompt = d->n_prompt;
    out->n_gen = res.n_generated;
    out->stop = decode_stop_name(res.stop);
    return 0;
}

/* The source of a trace --active teal records: its sets are what the run
 * chose (no true activations), chosen_by its thresholds and their file. */
static void teal_source(char *src, size_t len, const struct model *m, const struct run_setup *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", m->shape.name);
    cJSON_AddStringToObject(o, "model_dir", m->dir);
    cJSON_AddStringToObject(o, "recorded_by", "flashbed run");
    cJSON_AddStringToObject(o, "active", select_source(&p->cfg.select)->name);
    cJSON_AddStringToObject(o, "layout", "transposed");
    cJSON_AddStringToObject(o, "channel_sets", "the input channels the run kept (|x| above the layer's input cut)");
    cJSON_AddStringToObject(o, "active_sets", "the rows of down the run kept (|h| above the layer's intermediate "
                                              "cut; true activations not computed)");
    cJSON_AddStringToObject(o, "chosen_by", p->sel.desc);
    cJSON_AddStringToObject(o, "sparsify", p->sel.cal_path);
    char *text = cJSON_PrintUnformatted(o);
    snprintf(src, len, "%s", text ? text : "{}");
    free(text);
    cJSON_Delete(o);
}

/* The source of a trace a neuron source records. */
static void neuron_source(char *src, size_t len, const struct model *m, const struct run_setup *p, bool chooser)
{
    /* which chooser exactly (gate-cal: its thresholds file and target), JSON-quoted */
    cJSON *desc = cJSON_CreateString(p->have_sel ? p->sel.desc : "");
    char *chosen_by = desc ? cJSON_PrintUnformatted(desc) : NULL;
    cJSON_Delete(desc);
    /* a predictor's record without --check knows no true sets: its choice stands for them, and the source says so */
    snprintf(src, len, "{\"model\": \"%s\", \"model_dir\": \"%s\", \"recorded_by\": \"flashbed run\", "
             "\"threshold\": %g, \"active\": \"%s\", \"active_sets\": \"%s\"%s%s}",
             m->shape.name, m->dir, p->cfg.neuron.threshold, select_source(&p->cfg.select)->name,
             chooser && !p->cfg.neuron.check ? "the predicted sets (no --check: true activations not computed)" : "true activations",
             chooser && chosen_by ? ", \"chosen_by\": " : "", chooser && chosen_by ? chosen_by : "");
    free(chosen_by);
}

struct trace_writer *run_record_open(struct out_manifest *folder, const char *path, const struct model *m,
                                     const struct run_setup *p, char *err, size_t errlen)
{
    if (p->dense) {
        err_set(err, errlen, "the dense mode does not look at activations; use --mode all (or another flash mode)");
        return NULL;
    }
    const struct neuron_source_ops *source = select_source(&p->cfg.select);
    bool teal = source->reads_channels;
    bool chooser = source->deployable;
    struct trace_meta tm = model_trace_meta(m);
    tm.has_predicted = chooser;
    tm.has_channels = teal; /* input sparsity: the kept channels beside the kept rows of down */
    trace_meta_set_units(&tm);
    char src[8800];
    if (teal)
        teal_source(src, sizeof src, m, p);
    else
        neuron_source(src, sizeof src, m, p, chooser);
    tm.source = src;
    struct trace_writer *w = trace_writer_open(folder, path, &tm, err, errlen);
    if (!w)
        atomic_err_name_path(err, errlen, path);
    return w;
}

int run_engine_init(struct engine *e, const struct fb_settings *set, const struct model *m,
                    const struct backend_ops *be, struct run_setup *p, int threads, int max_seq, char *err,
                    size_t errlen)
{
    const struct ffn_ops *ops = p->dense                        ? &ffn_dense
                                : p->layout.ops->transposed ? &ffn_transposed /* input sparsity: ffn_t.bin */
                                                            : &ffn_flash;
    return engine_init_with(e, set, m, be, ops, p->dense ? NULL : &p->cfg, threads, max_seq, err, errlen);
}

void run_engine_extra(struct engine *e, const struct model *m, const struct run_setup *p,
                      struct run_report_extra *x)
{
    x->held_bytes = x->oracle_bytes = x->read_align = x->predictor_bytes = x->predictor_madds = 0;
    x->device = x->read_ahead = x->transposed = false;
    x->device_bytes = 0;
    x->staging_pinned = true;
    x->suggested_threshold = -1;
    x->suggested_from = 0;
    if (p->dense)
        return;
    x->suggested_threshold = ffn_flash_threshold_cut(&e->ffn, 0.5, &x->suggested_from);
    x->device = !e->be_info.host_visible;
    x->transposed = p->layout.ops->transposed;
    x->read_ahead = ffn_flash_reads_ahead(&p->cfg, x->device);
    x->held_bytes = ffn_flash_dram_bytes(&e->ffn, &x->oracle_bytes);
    x->device_bytes = ffn_flash_device_bytes(&e->ffn, &x->staging_pinned);
    x->read_align = ffn_flash_read_align(&e->ffn);
    x->predictor_bytes = ffn_flash_predictor_bytes(m, &p->cfg);
    x->predictor_madds = ffn_flash_predictor_madds(m, &p->cfg);
}
