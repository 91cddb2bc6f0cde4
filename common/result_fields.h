/* One table of named values per result row feeds both the JSON object and
 * the CSV row, so the two formats can never disagree (sweep points, replay
 * results). */
#ifndef FLASHBED_COMMON_RESULT_FIELDS_H
#define FLASHBED_COMMON_RESULT_FIELDS_H

#include <stdio.h>

#include <cjson/cJSON.h>

/* FIELD_NONE: a value not measured (a round a point stopped before):
 * null in JSON, an empty CSV column */
enum field_kind { FIELD_STR, FIELD_INT, FIELD_REAL, FIELD_BOOL, FIELD_NONE };

struct field {
    const char *key;
    enum field_kind kind;
    const char *s;  /* FIELD_STR */
    double v;       /* the others */
};

#define FIELDS_MAX 64
/* Appends one field to f[*n] (f has room for FIELDS_MAX). */
#define FIELD_ADD(f, n, key_, kind_, str, val) ((f)[(*(n))++] = (struct field){key_, kind_, str, (double)(val)})

void fields_to_json(cJSON *obj, const struct field *f, int n);
/* "key1,key2,...\n" and "v1,v2,...\n": integers in full, reals with %.10g.
 * A row with fewer fields than ncols (optional trailing keys absent) gets
 * empty columns, so every row has the header's columns. */
void fields_csv_header(FILE *out, const struct field *f, int n);
void fields_csv_row(FILE *out, const struct field *f, int n, int ncols);

#endif
