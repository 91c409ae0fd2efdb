/*
** tests/test_llamacpp.c - the GGUF families lenx reads from the graphs of llama.cpp's source (gptneox,
** bloom, mpt, falcon, gemma2, gemma3, phi2; docs/checkpoints.md#gguf), against llama.cpp itself: its own
** logits of each tiny fixture (tests/ref/gguf/NAME-tiny-hf.gguf, its converter's file), computed by
** llama.cpp's library on the same 48 token ids (tests/ref/gguf/llamacpp.sh, lllogits.c; CPU, fp32
** weights, its default f16 KV cache, flash attention off).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "harness/engine/kernels/numerics.h"
#include "tests/loaders_fixture.h"
#include "tests/hf_tiny.h"

TestSuite(llamacpp, .init = setup, .fini = teardown, .timeout = 120);

/* Every logit within 0.02 of llama.cpp's (measured at most 5.4e-3, on logits up to 13, on an AMD EPYC
** Zen 2): what remains is llama.cpp's fp16 arithmetic (its f16 KV cache rounds k and v, and with them q
** and the probabilities in its products; GELU and GeGLU read an fp16 table), well below what any part
** of a block misread would move: the same file under no position scheme at all ([nope] instead of the
** rope or ALiBi it holds) moves the logits by 0.88 to 7.2 (Gemma 3's local layers keep their own rope).
** Differences as small as this bound (GELU's exact form against its tanh form, say) are held by the
** directories' tests instead (gguf_runs_as_llama_cpp_reads_it, to 1e-5). */
Test(llamacpp, family_files_run_as_llama_cpp_runs_them)
{
    static const char *const names[] = {"neox", "bloom", "mpt", "falcon", "falcon-new", "gemma2", "gemma3", "phi2"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        double scale, d = gguf_vs_llama_cpp(names[i], NULL, &scale);
        cr_expect_leq(d, 0.02, "%s: max |dlogit| %g against llama.cpp's own (max |logit| %g)", names[i], d, scale);
        d = gguf_vs_llama_cpp(names[i], "[nope]", &scale);
        cr_expect_gt(d, 0.1, "%s without its positions: max |dlogit| only %g", names[i], d);
    }
}
