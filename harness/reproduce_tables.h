/* REPORT.md's Tables 2 and 3 (harness/reproduce.h): the measured runs'
 * medians over their rounds beside the cost model's price and the paper's
 * numbers, computed from runs/<shape>/<mode>-<source>-r<round>/run.json,
 * runs/<shape>/<mode>-<source>-predict/predict.json and configs/paper/.
 * Internal to harness/reproduce_*.c. */
#ifndef FLASHBED_HARNESS_REPRODUCE_TABLES_H
#define FLASHBED_HARNESS_REPRODUCE_TABLES_H

#include "common/strbuf.h"
#include "harness/reproduce.h"

void repro_section_table2(struct strbuf *b, const struct repro_plan *p);
void repro_section_table3(struct strbuf *b, const struct repro_plan *p);
/* What differs from the paper and why, from the numbers: the disk against
 * the M1 Max's at the paper's chunk sizes, the cost model's misses. */
void repro_section_differences(struct strbuf *b, const struct repro_plan *p);

#endif
