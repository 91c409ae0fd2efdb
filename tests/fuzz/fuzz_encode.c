/*
** tests/fuzz/fuzz_encode.c - libFuzzer target: fuzzed text -> encoded and
** decoded by one of three fixed real tokenizers (tests/fuzz/entry.h). Built
** and run by `make fuzz`, with the seed corpus tests/fuzz/corpus/encode/ and
** the dictionary tests/fuzz/encode.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_encode(data, n, &err);
    LX_ASSERT(rc == LX_OK || (rc < 0 && err.msg[0]));   /* an error always says what */
    return 0;
}
