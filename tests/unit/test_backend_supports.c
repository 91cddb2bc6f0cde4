/* What a backend says of itself before any instance (engine/compute/
 * backend.h): the list of backends (backends.def) as backend_find,
 * backend_nth, backend_names and the CLI's allowed values give it; every
 * backend asked for every op and every weight type of the table, all
 * supported today (cpu must always be); a backend this build lacks
 * supports nothing and describes itself as absent, with why; describe
 * against an instance's info where the device is here (opencl on PoCL),
 * and describe's refusal as create's where it is not (cuda without a GPU);
 * and the caller's rule: a backend that lacks one op for one type (a fake
 * one, cpu's ops but for supports) is refused by the engine in one line
 * naming backend, op and type, before its create is called, while a model
 * of a type it has runs; and backend_ops_<name>'s skips on it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_fixture.h"
#include "backend_fixture.h"
#include "check.h"
#include "common/fsutil.h"
#include "engine/compute/backend.h"
#include "engine/ffn/ffn.h"
#include "engine/forward/engine.h"

static size_t count_backends(void)
{
    size_t n = 0;
    while (backend_nth(n))
        n++;
    return n;
}

/* Whether name is one of the sep-separated words of list. */
static bool listed(const char *list, const char *name, const char *sep)
{
    size_t n = strlen(name);
    for (const char *p = list; p; p = strstr(p, sep) ? strstr(p, sep) + strlen(sep) : NULL)
        if (!strncmp(p, name, n) && (p[n] == '\0' || !strncmp(p + n, sep, strlen(sep))))
            return true;
    return false;
}

static void test_list(void)
{
    size_t n = count_backends();
    CHECK_U64(n, 4);
    CHECK_STR(backend_names(), "cpu, sim, opencl, cuda");
    CHECK_STR(BACKEND_ALLOWED, "cpu|sim|opencl|cuda");
    for (size_t i = 0; i < n; i++) {
        const struct backend_ops *b = backend_nth(i);
        CHECK(backend_find(b->name) == b);
        CHECK(listed(backend_names(), b->name, ", ") && listed(BACKEND_ALLOWED, b->name, "|"));
        CHECK(b->describe != NULL && b->create != NULL);
    }
    CHECK(backend_find("metal") == NULL && backend_nth(n) == NULL);
    CHECK(backend_find("cpu") == &backend_cpu && backend_find("sim") == &backend_sim);
    CHECK(backend_find("opencl") == &backend_opencl && backend_find("cuda") == &backend_cuda);
}

static void test_op_names(void)
{
    for (int i = 0; i < BACKEND_OP_COUNT; i++) {
        CHECK(strcmp(backend_op_name((enum backend_op)i), "?") != 0);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(backend_op_name((enum backend_op)i), backend_op_name((enum backend_op)j)) != 0);
    }
    CHECK_STR(backend_op_name(BACKEND_OP_MATVEC), "matvec");
    CHECK_STR(backend_op_name(BACKEND_OP_MOVE_ROWS), "move_rows");
    CHECK_STR(backend_op_name((enum backend_op)BACKEND_OP_COUNT), "?");
}

/* Every backend, every op, every type: supported today, the block
 * formats (the quantized rows) too, by the CPU kernels' backends (cpu,
 * sim: cpu is the model) and by the device kernels (opencl, cuda: ops.kern
 * decodes each). A backend this build lacks supports nothing and says
 * why it is absent. */
static void test_support_table(const struct fb_settings *set)
{
    int asked = 0, absent = 0;
    for (size_t i = 0; backend_nth(i); i++) {
        const struct backend_ops *b = backend_nth(i);
        if (!b->supports) { /* absent from this build */
            struct backend_device dev;
            char err[512] = "";
            CHECK(b->describe(set, &dev, err, sizeof err) != 0);
            CHECK(strstr(err, "this build has no") != NULL);
            CHECK(!backend_supports(b, BACKEND_OP_MATVEC, DTYPE_F32));
            CHECK(strcmp(b->name, "cpu") && strcmp(b->name, "sim"));
            absent++;
            continue;
        }
        for (int op = 0; op < BACKEND_OP_COUNT; op++)
            for (int t = 0; t < DTYPE_COUNT; t++, asked++) {
                bool want = true;
                if (backend_supports(b, (enum backend_op)op, (enum fb_dtype)t) != want) {
                    fprintf(stderr, "%s: %s %s for %s\n", b->name, want ? "no" : "unexpected",
                            backend_op_name((enum backend_op)op), wtype_name((enum fb_dtype)t));
                    CHECK(0);
                }
            }
        CHECK(!backend_supports(b, BACKEND_OP_MATVEC, (enum fb_dtype)DTYPE_COUNT)); /* outside the table */
    }
    CHECK_U64(asked + absent * BACKEND_OP_COUNT * DTYPE_COUNT, count_backends() * BACKEND_OP_COUNT * DTYPE_COUNT);
    printf("supports: %d questions asked, all as the table says; %d backends absent from this build\n", asked,
           absent);
}

static void test_describe_host(const struct fb_settings *set)
{
    struct backend_device dev;
    char err[512];
    CHECK(backend_cpu.describe(set, &dev, err, sizeof err) == 0);
    CHECK_STR(dev.device, "host CPU");
    CHECK(dev.host_visible && dev.zeroed && !dev.emulated && dev.mem_bytes == 0);
    CHECK(backend_sim.describe(set, &dev, err, sizeof err) == 0);
    CHECK_STR(dev.device, "sim (CPU kernels on a queue thread)");
    CHECK(!dev.host_visible && !dev.zeroed && dev.emulated);
}

/* A device backend's describe says what its instance's info says, or
 * refuses as its create does. */
static void test_describe_device(const struct fb_settings *set, const struct backend_ops *b)
{
    struct backend_device dev, inst;
    char why_d[1024] = "", why_c[1024] = "";
    int described = b->describe(set, &dev, why_d, sizeof why_d);
    struct cpu_kernels *ck = ck_create(set, 1, 64, 4, 2, why_c, sizeof why_c);
    CHECK(ck != NULL);
    struct backend_config cfg = {.set = set, .threads = 1, .max_dim = 64, .max_seq = 4, .max_heads = 2, .host = ck};
    struct backend *be = ck ? b->create(&cfg, why_c, sizeof why_c) : NULL;
    if (described != 0) {
        printf("%s: described as absent here: %s\n", b->name, why_d);
        CHECK(be == NULL && why_d[0] != '\0');
        CHECK_STR(why_c, why_d);
    } else if (!be) {
        fprintf(stderr, "%s: described (%s) but create failed: %s\n", b->name, dev.device, why_c);
        CHECK(0);
    } else {
        b->info(be, &inst);
        printf("%s: %s, %llu MiB%s\n", b->name, dev.device, (unsigned long long)(dev.mem_bytes >> 20),
               dev.emulated ? ", emulated" : "");
        CHECK_STR(dev.device, inst.device);
        CHECK(dev.device[0] != '\0' && dev.emulated == inst.emulated && dev.host_visible == inst.host_visible);
        CHECK(dev.zeroed == inst.zeroed && dev.mem_bytes == inst.mem_bytes);
        b->destroy(be);
    }
    ck_destroy(ck);
}

/* ---- the caller's rule, on a backend that lacks matvec for bf16 ---- */

static struct backend_ops fake;
static int fake_creates;

static bool fake_supports(enum backend_op op, enum fb_dtype t)
{
    return !(op == BACKEND_OP_MATVEC && t == DTYPE_BF16) && backend_supports(&backend_cpu, op, t);
}

static struct backend *fake_create(const struct backend_config *cfg, char *err, size_t errlen)
{
    fake_creates++;
    return backend_cpu.create(cfg, err, errlen);
}

static int write_model(const char *tmp, enum fb_dtype t, char *dir, size_t dirlen, char *err, size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct fx_model f;
    char tok[700];
    if (model_shape_load(&set, "llama-tiny", &s, err, errlen) != 0 || fx_init(&f, &s, 7, 2.5f) != 0)
        return -1;
    snprintf(tok, sizeof tok, "%s/tokenizer.bin", tmp);
    snprintf(dir, dirlen, "%s/model-%s", tmp, wtype_name(t));
    int rc = fx_write_tokenizer(tok, s.vocab_size) != 0 ? -1 : fx_write(&f, dir, t, tok, err, errlen);
    fx_free(&f);
    return rc;
}

/* The engine on the fake backend over a model of type t: 0 (freed
 * again) or -1 with the engine's err. */
static int engine_on_fake(const struct fb_settings *set, const char *tmp, enum fb_dtype t, char *err, size_t errlen)
{
    char dir[800];
    struct model m;
    struct engine e;
    if (write_model(tmp, t, dir, sizeof dir, err, errlen) != 0 || model_open(&m, dir, err, errlen) != 0) {
        fprintf(stderr, "the %s model: %s\n", wtype_name(t), err);
        CHECK(0);
        return -2;
    }
    int rc = engine_init(&e, set, &m, &fake, &ffn_dense, 1, 8, err, errlen);
    if (rc == 0) {
        CHECK(engine_forward(&e, 1, 0) == 0);
        engine_free(&e);
    }
    model_close(&m);
    return rc;
}

static void test_rule(const struct fb_settings *set)
{
    fake = backend_cpu;
    fake.name = "fake";
    fake.supports = fake_supports;
    fake.create = fake_create;
    struct backend_device dev;
    char err[1024] = "", tmp[] = "/tmp/flashbed-backend-supports-XXXXXX";
    CHECK(backend_check_type(&fake, set, DTYPE_F16, &dev, err, sizeof err) == 0);
    CHECK(backend_check_type(&fake, set, DTYPE_BF16, &dev, err, sizeof err) == -1);
    CHECK_STR(err, "fake backend: no matvec for bf16 weights (cpu computes every op for every type)");
    CHECK(backend_check_type(&backend_cpu, set, DTYPE_BF16, &dev, err, sizeof err) == 0);
    CHECK(backend_check_type(&backend_cpu, set, DTYPE_Q4_K, &dev, err, sizeof err) == 0); /* the block path */
    CHECK(backend_check_type(&backend_sim, set, DTYPE_Q4_0, &dev, err, sizeof err) == 0);
    /* the device kernels take the block formats too (where the backend
     * has a device here: describe comes first) */
    if (backend_opencl.describe(set, &dev, err, sizeof err) == 0) {
        CHECK(backend_check_type(&backend_opencl, set, DTYPE_Q4_0, &dev, err, sizeof err) == 0);
        CHECK(backend_check_type(&backend_opencl, set, DTYPE_Q6_K, &dev, err, sizeof err) == 0);
    }
    CHECK(mkdtemp(tmp) != NULL);
    /* refused in one line before anything: the instance never created */
    err[0] = '\0';
    CHECK(engine_on_fake(set, tmp, DTYPE_BF16, err, sizeof err) == -1);
    CHECK_STR(err, "fake backend: no matvec for bf16 weights (cpu computes every op for every type)");
    CHECK(strchr(err, '\n') == NULL);
    CHECK(fake_creates == 0);
    /* a type it has: created once, and it computes */
    CHECK(engine_on_fake(set, tmp, DTYPE_F16, err, sizeof err) == 0);
    CHECK(fake_creates == 1);
    CHECK(fs_remove_tree(tmp) == 0);
}

/* backend_ops_<name>'s questions (backend_fixture.h) on the fake: the
 * case it lacks skipped and counted, the others run. */
static void test_op_test_skips(void)
{
    struct bt t = {.name = "fake", .ops = &fake};
    CHECK(!bt_has(&t, BACKEND_OP_MATVEC, DTYPE_BF16) && t.skipped == 1);
    CHECK(bt_has(&t, BACKEND_OP_MATVEC, DTYPE_F16) && bt_has(&t, BACKEND_OP_EMBED, DTYPE_BF16));
    CHECK(bt_has_op(&t, BACKEND_OP_MATVEC) && bt_has_op(&t, BACKEND_OP_ROPE) && t.skipped == 1);
    CHECK(!bt_has_type(&t, DTYPE_BF16) && t.skipped == 2);
    CHECK(bt_has_type(&t, DTYPE_F32) && bt_has_type(&t, DTYPE_F16) && t.skipped == 2);
}

int main(void)
{
    struct fb_settings set = fb_settings_defaults();
    test_list();
    test_op_names();
    test_support_table(&set);
    test_describe_host(&set);
    test_describe_device(&set, &backend_opencl);
    test_describe_device(&set, &backend_cuda);
    test_rule(&set);
    test_op_test_skips();
    return check_report("test_backend_supports");
}
