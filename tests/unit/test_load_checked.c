/* Bytes of ffn.bin loaded outside the streamer's checked reads are checked
 * as they are loaded (issue 47): the oracle's and the gate's rows
 * (neuron_select_load_matrix), a sparsify file's fingerprint, and
 * model_bundle_check itself, with the message the checked reads give (file,
 * layer, neuron, byte offset); --verify off (MODEL_NO_VERIFY) loads
 * unchecked. And the sanity a run's stops read (ffn_sanity.h): a layer's
 * choice counted, a vector with NaN or infinity found, the first kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model_fixture.h"
#include "engine/ffn/ffn_sanity.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/sparsify_file.h"
#include "engine/model/model_integrity.h"

/* Writes n bytes of 0xff at byte off of dir's ffn.bin. */
static void damage(const char *dir, long off, int n)
{
    char path[700];
    snprintf(path, sizeof path, "%s/ffn.bin", dir);
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, off, SEEK_SET) == 0);
    for (int i = 0; f && i < n; i++)
        fputc(0xff, f);
    CHECK(f && fclose(f) == 0);
}

static void test_intact(const char *dir)
{
    struct model m;
    char err[512] = "";
    CHECK(model_open_flags(&m, dir, MODEL_FFN_ON_FLASH, err, sizeof err) == 0);
    void *up = NULL;
    CHECK(neuron_select_load_matrix(&m, 0, &up, err, sizeof err) == 0);
    char hex[65];
    CHECK(sparsify_model_fingerprint(&m, hex, err, sizeof err) == 0 && strlen(hex) == 64);
    free(up);
    model_close(&m);
}

/* Layer 1 neuron 5's up vector damaged: the rows' load names it. */
static void test_damaged(const char *dir)
{
    struct model m;
    char err[512] = "", want[900];
    CHECK(model_open_flags(&m, dir, MODEL_FFN_ON_FLASH, err, sizeof err) == 0);
    uint64_t off = ((uint64_t)m.shape.d_ff + 5) * m.bundle_stride;
    model_close(&m);
    damage(dir, (long)off + 8, 4);
    CHECK(model_open_flags(&m, dir, MODEL_FFN_ON_FLASH, err, sizeof err) == 0);
    snprintf(want, sizeof want, "%s/ffn.bin: layer 1 neuron 5 (byte offset %llu, %llu bytes) does not match its "
             "checksum in ffn.crc32c", dir, (unsigned long long)off, (unsigned long long)m.bundle_bytes);
    void *up = NULL;
    CHECK(neuron_select_load_matrix(&m, 0, &up, err, sizeof err) == -1);
    CHECK(strstr(err, want) != NULL);
    if (!strstr(err, want))
        fprintf(stderr, "got: %s\nwant: %s\n", err, want);
    free(up);
    char hex[65]; /* the fingerprint reads layer 1's first and last bundles: intact */
    CHECK(sparsify_model_fingerprint(&m, hex, err, sizeof err) == 0);
    /* model_bundle_check on the bundle as read, and on a good copy */
    uint8_t *b = malloc(m.bundle_bytes);
    FILE *f = fopen(m.ffn_path, "rb");
    CHECK(b && f && fseek(f, (long)off, SEEK_SET) == 0 && fread(b, 1, m.bundle_bytes, f) == m.bundle_bytes);
    CHECK(model_bundle_check(&m, 1, 5, b, err, sizeof err) == -1 && strstr(err, want));
    CHECK(model_bundle_check(&m, 1, 6, b, err, sizeof err) == -1); /* another bundle's checksum */
    fclose(f);
    free(b);
    model_close(&m);
    /* --verify off: loaded as it is */
    CHECK(model_open_flags(&m, dir, MODEL_FFN_ON_FLASH | MODEL_NO_VERIFY, err, sizeof err) == 0);
    CHECK(m.verify_off && neuron_select_load_matrix(&m, 0, &up, err, sizeof err) == 0);
    free(up);
    model_close(&m);
    /* the fingerprint's bundles: layer 0 neuron 0 damaged, refused */
    damage(dir, 4, 4);
    CHECK(model_open_flags(&m, dir, MODEL_FFN_ON_FLASH, err, sizeof err) == 0);
    CHECK(sparsify_model_fingerprint(&m, hex, err, sizeof err) == -1 &&
          strstr(err, "ffn.bin: layer 0 neuron 0 (byte offset 0, "));
    model_close(&m);
}

static void test_sanity(void)
{
    struct ffn_flash_sanity s = {0};
    float v[8] = {1, -2, 3, 0, 1e30f, -1e30f, 5, 6};
    ffn_sanity_chosen(&s, 3);
    ffn_sanity_chosen(&s, 0);
    CHECK(s.layers_chosen == 2 && s.layers_empty == 1);
    ffn_sanity_look(&s, 0, true, v, 8);
    ffn_sanity_look(&s, 0, false, NULL, 8); /* not on the host: nothing looked at */
    CHECK(s.nonfinite == 0);
    v[6] = INFINITY;
    ffn_sanity_look(&s, 1, false, v, 8);
    v[6] = NAN;
    ffn_sanity_look(&s, 2, true, v, 8);
    CHECK(s.nonfinite == 2 && s.first_nonfinite == 1 && !s.first_in_input);
    struct ffn_flash_sanity t = {0};
    v[6] = -INFINITY;
    ffn_sanity_look(&t, 3, true, v, 7);
    CHECK(t.nonfinite == 1 && t.first_nonfinite == 3 && t.first_in_input);
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-load-checked-XXXXXX";
    char err[512], dir[600];
    struct model_shape shape;
    CHECK(fixture_opt_tiny(tmp, dir, sizeof dir, 5, 0.15, &shape, err, sizeof err) == 0);
    test_intact(dir);
    test_damaged(dir);
    test_sanity();
    fixture_remove(tmp);
    return check_report("test_load_checked");
}
