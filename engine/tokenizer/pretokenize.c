/* Byte-level BPE's pre-tokenizers by name (tokenizer.h's enum
 * tokenizer_pre). */
#include "engine/tokenizer/tokenizer_internal.h"

size_t tokenizer_pretoken_end(enum tokenizer_pre pre, const char *text, size_t len, size_t i)
{
    switch (pre) {
    case TOKENIZER_PRE_LEGACY:
    case TOKENIZER_PRE_GPT2:
    case TOKENIZER_PRE_LLAMA3:
    case TOKENIZER_PRE_QWEN2:
    case TOKENIZER_PRE_SMOLLM:
    case TOKENIZER_PRE_DEFAULT:
        break;
    }
    return tokenizer_pretoken_end_legacy(text, len, i);
}
