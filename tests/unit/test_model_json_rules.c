/* model.json's rules (engine/model/model_load.c, model_table.c), one
 * edit of a real model's model.json per rule: the format's version, and
 * the DRAM table (entries named, names unique, offsets 64-byte aligned as
 * the writer places them, no two tensors sharing bytes). Each is refused
 * by model_open naming model.json, the tensor or key and what is wrong;
 * the model as written opens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "model_fixture.h"

static char model[600], json_path[700];
static char *pristine;

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    if (t && fread(t, 1, (size_t)n, f) == (size_t)n)
        t[n] = '\0';
    fclose(f);
    return t;
}

static void write_json(const cJSON *o)
{
    char *text = cJSON_Print(o);
    FILE *f = fopen(json_path, "wb");
    CHECK(f && text && fputs(text, f) >= 0);
    if (f)
        fclose(f);
    free(text);
}

/* The tensors table's entry called name. */
static cJSON *entry(cJSON *o, const char *name)
{
    cJSON *e, *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "dram"), "tensors");
    cJSON_ArrayForEach(e, t)
    {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name")), name))
            return e;
    }
    return NULL;
}

static void set_number(cJSON *o, const char *key, double v)
{
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateNumber(v));
}

enum edit { VERSION_2, VERSION_NONE, MISALIGNED, OVERLAP, NAME_TWICE, NO_NAME, NO_TABLE };

static void apply(cJSON *o, enum edit e)
{
    cJSON *dram = cJSON_GetObjectItemCaseSensitive(o, "dram");
    cJSON *tensors = cJSON_GetObjectItemCaseSensitive(dram, "tensors");
    cJSON *norm = entry(o, "final_norm.weight"), *emb = entry(o, "tok_embedding");
    double emb_off = cJSON_GetObjectItemCaseSensitive(emb, "offset")->valuedouble;
    double norm_off = cJSON_GetObjectItemCaseSensitive(norm, "offset")->valuedouble;
    if (e == VERSION_2)
        set_number(o, "format_version", 2);
    else if (e == VERSION_NONE)
        cJSON_DeleteItemFromObjectCaseSensitive(o, "format_version");
    else if (e == MISALIGNED)
        set_number(norm, "offset", norm_off + 4);
    else if (e == OVERLAP)
        set_number(norm, "offset", emb_off + 64);
    else if (e == NAME_TWICE)
        cJSON_AddItemToArray(tensors, cJSON_Duplicate(emb, 1));
    else if (e == NO_NAME)
        cJSON_DeleteItemFromObjectCaseSensitive(norm, "name");
    else
        cJSON_DeleteItemFromObjectCaseSensitive(dram, "tensors");
}

static void refused(const char *what, enum edit e, const char *want)
{
    cJSON *o = cJSON_Parse(pristine);
    apply(o, e);
    write_json(o);
    cJSON_Delete(o);
    struct model m;
    char why[512] = "";
    int rc = model_open(&m, model, why, sizeof why);
    CHECK(rc == -1);
    if (rc == 0)
        model_close(&m);
    CHECK(strstr(why, "model.json") != NULL);
    if (!strstr(why, want)) {
        check_failures++;
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, why, want);
    }
    check_count++;
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-model-json-XXXXXX", why[512];
    struct model_shape shape;
    int made = fixture_opt_tiny(tmp, model, sizeof model, 3, 0.2, &shape, why, sizeof why);
    if (made)
        fprintf(stderr, "fixture: %s\n", why);
    CHECK(made == 0);
    snprintf(json_path, sizeof json_path, "%s/model.json", model);
    pristine = made ? NULL : read_all(json_path);
    CHECK(pristine != NULL);
    if (pristine) {
        struct model m;
        CHECK(model_open(&m, model, why, sizeof why) == 0);
        model_close(&m);
        refused("newer format", VERSION_2, "\"format_version\" must be a whole number from 1 to 1, not 2");
        refused("no format version", VERSION_NONE, "\"format_version\"");
        refused("misaligned tensor", MISALIGNED, "tensor 'final_norm.weight' \"offset\"");
        refused("misaligned tensor", MISALIGNED, "is not a multiple of 64");
        refused("overlapping tensors", OVERLAP, "tensor 'final_norm.weight' (bytes");
        refused("overlapping tensors", OVERLAP, "overlaps tensor 'tok_embedding'");
        refused("name twice", NAME_TWICE, "tensor 'tok_embedding' is listed twice in \"dram\"");
        refused("entry without a name", NO_NAME, "a \"dram\" \"tensors\" entry is not an object with a \"name\"");
        refused("no table", NO_TABLE, "\"dram\" has no \"tensors\" list");
    }
    free(pristine);
    fixture_remove(tmp);
    return check_report("test_model_json_rules");
}
