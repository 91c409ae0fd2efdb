/*
** tests/fuzz/fuzz_hf_config.c - libFuzzer target: bytes as a Hugging Face
** config.json beside fixed weights -> the directory loaded and its stacks
** compiled (tests/fuzz/entry.h). Built and run by `make fuzz`, with the seed
** corpus tests/fuzz/corpus/hf_config/ and the dictionary tests/fuzz/hf_config.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_hf_config(data, n, &err);
    LX_ASSERT(rc == LX_OK || (rc < 0 && err.msg[0]));   /* an error always says what */
    return 0;
}
