/*
** tests/fuzz/fuzz_gguf.c - libFuzzer target: random bytes as a GGUF file ->
** the container reader and the model loader (tests/fuzz/entry.h,
** harness/core/gguf.h). Aborts when a tensor's data lies outside
** the file, a name does not find its tensor, or a refusal has no message.
** Built and run by `make fuzz`, with the seed corpus tests/fuzz/corpus/gguf/
** and the dictionary tests/fuzz/gguf.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_gguf(data, n, &err);
    LX_ASSERT(rc == LX_OK || (rc < 0 && err.msg[0]));
    return 0;
}
