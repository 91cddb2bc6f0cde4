#include "common/result_fields.h"

void fields_to_json(cJSON *obj, const struct field *f, int n)
{
    for (int k = 0; k < n; k++) {
        switch (f[k].kind) {
        case FIELD_STR: cJSON_AddStringToObject(obj, f[k].key, f[k].s); break;
        case FIELD_BOOL: cJSON_AddBoolToObject(obj, f[k].key, f[k].v != 0); break;
        case FIELD_INT:
        case FIELD_REAL: cJSON_AddNumberToObject(obj, f[k].key, f[k].v); break;
        case FIELD_NONE: cJSON_AddNullToObject(obj, f[k].key); break;
        }
    }
}

void fields_csv_header(FILE *out, const struct field *f, int n)
{
    for (int k = 0; k < n; k++)
        fprintf(out, "%s%s", k ? "," : "", f[k].key);
    fputc('\n', out);
}

void fields_csv_row(FILE *out, const struct field *f, int n, int ncols)
{
    for (int k = 0; k < ncols; k++) {
        const char *sep = k ? "," : "";
        if (k >= n) {
            fputs(sep, out);
            continue;
        }
        switch (f[k].kind) {
        case FIELD_STR: fprintf(out, "%s%s", sep, f[k].s); break;
        case FIELD_INT: fprintf(out, "%s%.0f", sep, f[k].v); break;
        case FIELD_BOOL: fprintf(out, "%s%s", sep, f[k].v != 0 ? "true" : "false"); break;
        case FIELD_REAL: fprintf(out, "%s%.10g", sep, f[k].v); break;
        case FIELD_NONE: fputs(sep, out); break;
        }
    }
    fputc('\n', out);
}
