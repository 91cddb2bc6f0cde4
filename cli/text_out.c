/* Text in and out for the generating commands (generate, run): prompts
 * from files, tokens to stdout as they come (and to JSON records). */
#include "cli/text_out.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_file.h"
#include "common/log.h"

char *read_prompt_file(const char *path)
{
    char *text = read_text_file(path, NULL);
    if (!text)
        fb_error("%s: cannot read: %s", path, strerror(errno));
    return text;
}

void emit_token(const struct tokenizer *t, int prev, int id, cJSON *rec)
{
    char b[2];
    size_t len;
    const char *s = tokenizer_decode(t, prev, id, &len, b);
    fwrite(s, 1, len, stdout);
    if (rec) {
        /* a token may be part of a UTF-8 character: JSON gets U+FFFD for
         * bytes that do not form one by themselves */
        char *copy = malloc(3 * len + 1);
        size_t o = 0;
        for (size_t i = 0; i < len;) {
            unsigned char c = (unsigned char)s[i];
            size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            bool ok = n > 0 && i + n <= len && (n > 1 || c >= 0x20 || c == '\n' || c == '\t');
            for (size_t k = 1; ok && k < n; k++)
                ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
            if (ok) {
                memcpy(copy + o, s + i, n);
                o += n;
                i += n;
            } else {
                memcpy(copy + o, "\xef\xbf\xbd", 3);
                o += 3;
                i++;
            }
        }
        copy[o] = '\0';
        cJSON_AddStringToObject(rec, "text", copy);
        free(copy);
    }
}

void emit_prompt(const struct tokenizer *t, const int *prompt, int n_prompt)
{
    /* a leading BOS prints nothing; a vocabulary that adds none (Qwen's,
     * SmolLM's) starts with the text's first token, printed as after BOS */
    int from = n_prompt > 0 && prompt[0] == t->bos_id ? 1 : 0;
    for (int i = from; i < n_prompt; i++)
        emit_token(t, i ? prompt[i - 1] : t->bos_id, prompt[i], NULL);
    fflush(stdout);
}


int *encode_prompt(const struct model *m, const char *text, uint64_t keep, int *n)
{
    size_t tlen = strlen(text);
    int *prompt = malloc(tokenizer_max_tokens(tlen) * sizeof *prompt);
    if (!prompt)
        return NULL;
    *n = (int)tokenizer_encode(&m->tok, text, tlen, true, prompt);
    uint64_t bos = *n > 0 && prompt[0] == m->tok.bos_id; /* kept beside the text's tokens */
    if (keep && (uint64_t)*n > keep + bos)
        *n = (int)(keep + bos);
    return prompt;
}
