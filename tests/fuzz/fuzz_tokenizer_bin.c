/*
** tests/fuzz/fuzz_tokenizer_bin.c - libFuzzer target: bytes -> a llama2.c
** tokenizer.bin opened, fixed texts encoded and decoded back
** (tests/fuzz/entry.h). Built and run by `make fuzz`, with the seed corpus
** tests/fuzz/corpus/tokenizer_bin/ and the dictionary
** tests/fuzz/tokenizer_bin.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_tokenizer_bin(data, n, &err);
    LX_ASSERT(rc == LX_OK || (rc < 0 && err.msg[0]));   /* an error always says what */
    return 0;
}
