/*
** tests/fuzz/fuzz_serve.c - libFuzzer target: random bytes as requests to
** `lenx serve` -> the request parsers and the whole answer on a tiny model
** (tests/fuzz/entry.h, harness/backends/serve.h). Aborts when an answer is
** not JSON, an error has no message, or a status is one the API does not
** give. Built and run by `make fuzz`, with the seed corpus
** tests/fuzz/corpus/serve/ and the dictionary tests/fuzz/serve.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_serve(data, n, &err);
    LX_ASSERT(rc == LX_OK);
    return 0;
}
