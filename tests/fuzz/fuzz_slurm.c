/*
** tests/fuzz/fuzz_slurm.c - libFuzzer target: random option values and paths
** -> the job scripts of `lenx slurm` (tests/fuzz/entry.h, harness/scaleout/slurm.h).
** Aborts when a header line is not a comment or an #SBATCH line with one
** option, or when a value escapes its quotes in the shell's reading. Built
** and run by `make fuzz`, with the seed corpus tests/fuzz/corpus/slurm/ and
** the dictionary tests/fuzz/slurm.dict.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    int rc = lx_fuzz_feed_slurm(data, n, &err);
    LX_ASSERT(rc == LX_OK || (rc < 0 && err.msg[0]));   /* an error always says what */
    return 0;
}
