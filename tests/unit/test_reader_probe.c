/* The reader probe (io/reader_probe.h): every candidate is measured on
 * batches of the file (a throughput above zero), the one chosen is the
 * fastest measured, and bad input fails naming what is wrong — an unknown
 * engine, a file smaller than one read, nothing to measure — with no
 * reader thread left behind. Buffered reads, so that the test runs on any
 * file system (the probe's reads are the flash reader's, tested apart). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/reader_probe.h"

#define FILE_BYTES (4u << 20)
#define PATH "test_reader_probe.bin"

static int write_file(void)
{
    FILE *f = fopen(PATH, "wb");
    if (!f)
        return -1;
    static unsigned char block[1 << 16];
    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (unsigned char)(i * 31u);
    for (size_t done = 0; done < FILE_BYTES; done += sizeof block)
        fwrite(block, 1, sizeof block, f);
    return fclose(f);
}

static struct reader_probe_config config(void)
{
    return (struct reader_probe_config){.path = PATH, .file_bytes = FILE_BYTES, .stride = 8192, .read_bytes = 8192,
                                        .batch_reads = 64, .rounds = 3, .direct = false, .max_read = 1u << 20,
                                        .seed = 7};
}

static void check_choice(void)
{
    struct reader_candidate c[3] = {{"psync", 4, 1, 0}, {"io_uring", 1, 8, 0}, {"psync", 1, 1, 0}};
    struct reader_probe_config cfg = config();
    size_t best = 99;
    char err[512] = "";
    CHECK(reader_probe(&cfg, c, 3, &best, err, sizeof err) == 0);
    if (err[0])
        fprintf(stderr, "probe: %s\n", err);
    CHECK(best < 3);
    for (size_t i = 0; i < 3; i++) {
        CHECK(c[i].bytes_per_s > 0);
        CHECK(best >= 3 || c[i].bytes_per_s <= c[best].bytes_per_s);
    }
}

static void check_refusals(void)
{
    struct reader_candidate bad[1] = {{"carrier-pigeon", 1, 1, 0}};
    struct reader_probe_config cfg = config();
    size_t best = 0;
    char err[512] = "";
    CHECK(reader_probe(&cfg, bad, 1, &best, err, sizeof err) != 0);
    CHECK(strstr(err, "carrier-pigeon") != NULL);
    struct reader_candidate ok[1] = {{"psync", 1, 1, 0}};
    cfg.read_bytes = cfg.stride = 2 * (uint64_t)FILE_BYTES;
    CHECK(reader_probe(&cfg, ok, 1, &best, err, sizeof err) != 0);
    CHECK(strstr(err, PATH) != NULL);
    cfg = config();
    cfg.rounds = 0;
    CHECK(reader_probe(&cfg, ok, 1, &best, err, sizeof err) != 0);
    CHECK(reader_probe(&cfg, ok, 0, &best, err, sizeof err) != 0);
}

int main(void)
{
    CHECK(write_file() == 0);
    check_choice();
    check_refusals();
    unlink(PATH);
    return check_report("test_reader_probe");
}
