/*
** tests/fuzz/fuzz_ruler.c - libFuzzer target: bytes as a file a RULER preset
** reads (a SQuAD or HotpotQA dev file, a word list, RULER's essays JSON) ->
** the preset's maker (tests/fuzz/entry.h). Built and run by `make fuzz`, with
** the seed corpus tests/fuzz/corpus/ruler/ and the dictionary tests/fuzz/ruler.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_ruler(data, n, &err);
    LX_ASSERT(rc == LX_OK || (rc < 0 && err.msg[0]));   /* an error always says what */
    return 0;
}
