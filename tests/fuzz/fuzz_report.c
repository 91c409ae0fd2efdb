/*
** tests/fuzz/fuzz_report.c - libFuzzer target: stored strings through the
** escaping of `lenx report` and `lenx table` (docs/results.md#escaping).
** Built and run by `make fuzz`, with the seeds in tests/fuzz/corpus/report/
** and the dictionary tests/fuzz/report.dict; the checks are
** lx_fuzz_feed_report in tests/fuzz/entry_writers.c.
**
** The input is up to six strings separated by NUL bytes, as a store may hold
** them (any bytes: markup, quotes, newlines, control bytes). Each goes through
** every context's escaper and the result is checked against the context's
** grammar; a string escaping its context aborts (LX_ASSERT):
**   html   no < > " ' and no control byte but tab, LF, CR; every & starts
**          one of the five entities written; decoding gives the string back;
**   md     one line; | ` * < > only backslash-escaped or as entities;
**   latex  no bare special; a backslash starts one of the commands written;
**   csv    read back as one RFC 4180 field, the same bytes;
**   gnuplot  the script of plots labelled with the strings has, with every
**          single-quoted literal emptied, the same text as the script of the
**          same plots with empty labels: no string adds or ends a command.
*/
#include "tests/fuzz/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct lx_error err = {{0}};
    LX_ASSERT(lx_fuzz_feed_report(data, n, &err) == LX_OK);    /* a string out of its context aborts */
    return 0;
}
