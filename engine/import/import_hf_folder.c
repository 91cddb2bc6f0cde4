/* What a Hugging Face folder holds, checked before anything is read: the
 * weights as safetensors and a tokenizer flashbed reads. A folder as users
 * bring it (PyTorch's pytorch_model.bin, no tokenizer.json) gets a message
 * that says what flashbed expects and the shortest way there. */
#include "engine/import/import_hf_arch.h"

#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/fsutil.h"

/* Whether dir/name exists. */
static bool has(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%.4000s/%.100s", dir, name);
    return path_exists(path);
}

/* transformers' re-save of a folder as safetensors, model and tokenizer
 * together (one command; safetensors is save_pretrained's default). */
#define RESAVE                                                                                                \
    "python3 -c \"import sys, transformers as t; d, o = sys.argv[1:]; "                                        \
    "t.AutoModelForCausalLM.from_pretrained(d).save_pretrained(o); "                                           \
    "t.AutoTokenizer.from_pretrained(d).save_pretrained(o)\" %s %s-safetensors"

static int check_weights(const char *dir, char *err, size_t errlen)
{
    if (has(dir, "model.safetensors") || has(dir, "model.safetensors.index.json"))
        return 0;
    if (has(dir, "pytorch_model.bin") || has(dir, "pytorch_model.bin.index.json"))
        return err_set(err, errlen,
                       "%s: holds pytorch_model.bin (PyTorch's pickle format), which flashbed does not read: it "
                       "reads model.safetensors (or shards listed in model.safetensors.index.json). Download the "
                       "repository's safetensors files if it has them, or re-save the folder with transformers: " RESAVE
                       ", then convert %s-safetensors",
                       dir, dir, dir, dir);
    return err_set(err, errlen,
                   "%s: no model.safetensors (nor model.safetensors.index.json and its shards): a Hugging Face "
                   "folder holds config.json, the weights as model.safetensors and tokenizer.json or "
                   "tokenizer.model, as the model's repository ships them",
                   dir);
}

int hf_folder_check(const char *dir, const char *tokenizer, char *tokpath, size_t len, bool *spm, char *err,
                    size_t errlen)
{
    if (check_weights(dir, err, errlen) != 0)
        return -1;
    *spm = false;
    snprintf(tokpath, len, "%s/tokenizer.json", dir);
    if (tokenizer || has(dir, "tokenizer.json"))
        return 0;
    if (has(dir, "tokenizer.model")) {
        *spm = true;
        snprintf(tokpath, len, "%s/tokenizer.model", dir);
        return 0;
    }
    return err_set(err, errlen,
                   "%s: no tokenizer.json or tokenizer.model: flashbed reads either (copy the one the model's "
                   "repository ships beside config.json), or a llama2.c tokenizer.bin given with --tokenizer FILE",
                   dir);
}

/* The folder path is in (".": none named) into dir. */
static void folder_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else
        snprintf(dir, len, "%.*s", (int)(slash == path ? 1 : slash - path), path);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

int import_lone_file_check(const char *path, char *err, size_t errlen)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    bool st = ends_with(base, ".safetensors"), pt = ends_with(base, ".pt") || ends_with(base, ".pth") ||
                                                     !strncmp(base, "pytorch_model", 13);
    bool part = !strcmp(base, "config.json") || !strcmp(base, "tokenizer.json") || !strcmp(base, "tokenizer.model");
    if (!st && !pt && !part)
        return 0;
    char dir[4200], how[4400];
    folder_of(path, dir, sizeof dir);
    if (has(dir, "config.json"))
        snprintf(how, sizeof how, "its folder has config.json: flashbed convert %.4000s --out DIR", dir);
    else
        snprintf(how, sizeof how, "put it in a folder with the repository's config.json and tokenizer.json (or "
                 "tokenizer.model), then flashbed convert FOLDER --out DIR");
    if (pt)
        return err_set(err, errlen, "%s: a PyTorch checkpoint, which flashbed does not read; it converts a Hugging "
                       "Face folder whose weights are model.safetensors (transformers' save_pretrained writes "
                       "them), or a GGUF file", path);
    return err_set(err, errlen, "%s: %s; flashbed converts the Hugging Face folder it comes from (config.json, "
                   "model.safetensors, tokenizer.json or tokenizer.model): %s", path,
                   st ? "a safetensors file holds the weights alone" : "one file of a Hugging Face folder", how);
}
