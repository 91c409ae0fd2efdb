/*
** tests/fuzz/fuzz_safetensors.c - libFuzzer target: bytes -> the safetensors
** reader and the lenx checkpoint loader (tests/fuzz/entry.h). Built and run by
** `make fuzz`, with the seed corpus tests/fuzz/corpus/safetensors/ and the
** dictionary tests/fuzz/safetensors.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_safetensors(data, n, &err);
    LX_ASSERT(rc == LX_OK || (rc < 0 && err.msg[0]));   /* an error always says what */
    return 0;
}
