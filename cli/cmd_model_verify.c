/* flashbed model verify DIR: a whole model folder checked (engine/model/
 * model_verify.h), every damaged place named. Exit 0 intact, 1 damaged or
 * unreadable, 2 usage. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/log.h"
#include "common/options.h"
#include "engine/model/model_verify.h"

struct verify_opts {
    int unused;
};

static const struct opt_def verify_options[] = {
    OPT_END,
};

static const struct opt_command verify_command = {
    .name = "model verify",
    .usage = "DIR",
    .summary = "Checks a flashbed model folder: model.json against the files and the shape, then\n"
               "every DRAM tensor and every FFN bundle against its CRC-32C (written by convert\n"
               "and model make since checksums exist) and for NaN or infinite values. Names each\n"
               "damaged place: the file, the tensor or the layer and neuron, the byte offset\n"
               "(the first 20; the rest counted). ffn_t.bin (model transpose), when present:\n"
               "each channel bundle and row of down against ffn_t.crc32c and for finite values.\n"
               "A folder without checksums is checked for\n"
               "sizes and finite values only, and says so. Exit status: 0 intact, 1 damaged.",
    .opts = verify_options,
    .max_positional = 1,
};

static void print_report(const char *dir, const struct model_verify_report *r)
{
    for (size_t i = 0; i < r->n_listed; i++)
        printf("damaged: %s\n", r->listed[i]);
    uint64_t places = r->bad_checksums + r->nonfinite;
    if (places > r->n_listed)
        printf("damaged: ... and %llu more\n", (unsigned long long)(places - r->n_listed));
    printf("%s: %s: %llu tensors and %llu FFN bundles %s", dir, model_verify_intact(r) ? "intact" : "DAMAGED",
           (unsigned long long)r->tensors, (unsigned long long)r->bundles,
           r->checked ? "checked against their CRC-32C and for finite values" : "checked for finite values");
    if (!model_verify_intact(r))
        printf(" (%llu checksum mismatches, %llu with NaN or infinite values)", (unsigned long long)r->bad_checksums,
               (unsigned long long)r->nonfinite);
    printf("\n");
    if (r->has_transposed)
        printf("ffn_t.bin: %llu channel bundles and %llu rows of down %s\n", (unsigned long long)r->channels,
               (unsigned long long)r->down_rows,
               r->transposed_checked ? "checked against their CRC-32C and for finite values"
                                     : "checked for finite values (unchecked: ffn_t.bin has no checksums; "
                                       "flashbed model transpose DIR --force adds them)");
    if (!r->checked)
        printf("note: %s has no checksums (written before flashbed recorded them): damage that keeps values "
               "finite cannot be seen; convert it again to add them\n",
               dir);
}

int cmd_model_verify(int argc, char **argv)
{
    struct verify_opts o;
    char *pos[1] = {NULL};
    int npos = 0, rc;
    if (!cli_start(&verify_command, &o, sizeof o, argc, argv, pos, &npos, &rc))
        return rc;
    opts_free(&verify_command, &o);
    if (npos != 1) {
        fb_error("model verify: needs the model folder DIR");
        return 2;
    }
    struct model_verify_report r;
    struct cli_progress bar;
    struct progress_report report = cli_progress_report(&bar);
    char err[4600];
    rc = model_verify(pos[0], &report, &r, err, sizeof err);
    cli_progress_end(&bar);
    if (rc != 0) {
        fb_error("model verify: %s", err);
        return 1;
    }
    print_report(pos[0], &r);
    return model_verify_intact(&r) ? 0 : 1;
}
