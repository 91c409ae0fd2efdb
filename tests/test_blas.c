/*
** tests/test_blas.c - the OpenBLAS kernels lenx runs in fast numerics
** (harness/engine/kernels/blas.c; docs/numerics.md#a-cpu-that-openblas-does-not-know).
**
** Debian 12's OpenBLAS 0.3.21 falls back to its SSE3 (Prescott) kernels on a
** CPU it does not know; lenx then sets OPENBLAS_CORETYPE to the best core type
** for the CPU and runs itself again. No CI machine is such a CPU, so these
** tests make lenx see one through LENX_TEST_OPENBLAS_CORE=Prescott (it takes
** that for OpenBLAS's pick) and check what the re-executed process runs
** against the core type this file derives on its own from /proc/cpuinfo.
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/shell.h"

static void setup(void)
{
    shell_setup("blas");
    (void)sql_long;     /* shell.h's; unused here */
}

/* The core type a CPU with these /proc/cpuinfo flags should run, from the
** kernel families of OpenBLAS 0.3.21: Cooperlake (SkylakeX + bf16) for
** AVX-512 with BF16, SkylakeX for AVX-512 F/BW/VL/DQ/CD, Haswell for AVX2 +
** FMA; NULL below that. */
static const char *expected_core(void)
{
    static char flags[8192];
    FILE *f = fopen("/proc/cpuinfo", "r");
    cr_assert_not_null(f);
    flags[0] = '\0';
    char line[8192];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            snprintf(flags, sizeof flags, " %s ", strchr(line, ':') + 1);
            break;
        }
    fclose(f);
    char *nl = strchr(flags, '\n');
    if (nl)
        *nl = ' ';
#define HAS(x) (strstr(flags, " " x " ") != NULL)
    if (HAS("avx512f") && HAS("avx512bw") && HAS("avx512vl") && HAS("avx512dq") && HAS("avx512cd"))
        return HAS("avx512_bf16") ? "Cooperlake" : "SkylakeX";
    return HAS("avx2") && HAS("fma") ? "Haswell" : NULL;
#undef HAS
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* `lenx score` of stories260K on a short text with the given environment
** prefix; its JSON on stdout into out, its stderr into err. */
static int score(char *out, size_t n, char *err, size_t ne, const char *env)
{
    const char *model = "$R/../shared/models/stories260K/stories260K.bin";
    char path[512];
    snprintf(path, sizeof path, "%s/../shared/models/stories260K/stories260K.bin",
             getenv("LENX_ROOT") ? getenv("LENX_ROOT") : ".");
    FILE *f = fopen(path, "rb");
    if (!f)
        cr_skip_test("%s is absent (the shared stories260K test data)", path);
    fclose(f);
    write_file("t.txt", "Once upon a time, a little girl named Lily found a big red ball in the park.\n");
    int rc = sh(out, n, "%s $L score --model %s --text t.txt 2>err.txt", env, model);
    sh(err, ne, "cat err.txt");
    return rc;
}

/* The "blas" provenance field of score's JSON, e.g. "core=SkylakeX threading=openmp". */
static void blas_field(const char *json, char *core, size_t n)
{
    const char *p = strstr(json, "\"blas\": \"core=");
    cr_assert_not_null(p, "%s", json);
    p += strlen("\"blas\": \"core=");
    size_t k = strcspn(p, " \"");
    snprintf(core, n, "%.*s", (int)k, p);
}

static void nll_list(const char *json, char *out, size_t n)
{
    const char *p = strstr(json, "\"nll\": [");
    cr_assert_not_null(p, "%s", json);
    snprintf(out, n, "%s", p);
}

Test(blas, a_cpu_openblas_does_not_know_runs_its_best_kernels, .init = setup, .fini = teardown, .timeout = 60)
{
    const char *best = expected_core();
    if (!best)
        cr_skip_test("this CPU has no AVX2: OpenBLAS's SSE3 kernels are its best");
    static char out[65536], err[4096], hand[65536], herr[4096];
    char core[64], hcore[64], a[65536], b[65536];
    cr_assert_eq(score(out, sizeof out, err, sizeof err,
                       "env -u OPENBLAS_CORETYPE LENX_TEST_OPENBLAS_CORE=Prescott"), 0, "%s%s", out, err);
    blas_field(out, core, sizeof core);
    cr_expect_str_eq(core, best, "provenance: %s", out);
    /* it says what it did, once */
    cr_expect_eq(count(err, "OpenBLAS picked its Prescott kernels on this CPU"), 1, "%s", err);
    cr_expect(strstr(err, "OPENBLAS_CORETYPE=") != NULL && strstr(err, best) != NULL, "%s", err);
    /* the same kernels set by hand: the same bits, and no word on stderr */
    char env[128];
    snprintf(env, sizeof env, "OPENBLAS_CORETYPE=%s", best);
    cr_assert_eq(score(hand, sizeof hand, herr, sizeof herr, env), 0, "%s%s", hand, herr);
    blas_field(hand, hcore, sizeof hcore);
    cr_expect_str_eq(hcore, best);
    cr_expect_eq(count(herr, "lenx: "), 0, "%s", herr);
    nll_list(out, a, sizeof a);
    nll_list(hand, b, sizeof b);
    cr_expect_str_eq(a, b);
}

Test(blas, the_users_own_coretype_is_kept, .init = setup, .fini = teardown, .timeout = 60)
{
    const char *best = expected_core();
    static char out[65536], err[4096];
    char core[64];
    cr_assert_eq(score(out, sizeof out, err, sizeof err,
                       "env OPENBLAS_CORETYPE=Prescott LENX_TEST_OPENBLAS_CORE=Prescott"), 0, "%s%s", out, err);
    blas_field(out, core, sizeof core);
    cr_expect_str_eq(core, "Prescott", "provenance: %s", out);
    cr_expect(strstr(err, "ran itself again") == NULL, "%s", err);
    if (best)   /* narrower than the CPU: a warning naming the variable, with what lenx would pick */
        cr_expect(strstr(err, "lenx: warning: OpenBLAS runs its Prescott kernels") != NULL &&
                  strstr(err, "(OPENBLAS_CORETYPE=Prescott)") != NULL && strstr(err, best) != NULL, "%s", err);
}

Test(blas, a_sweep_stores_the_kernels_lenx_chose_and_notes_it_once, .init = setup, .fini = teardown,
     .timeout = 60)
{
    const char *best = expected_core();
    if (!best)
        cr_skip_test("this CPU has no AVX2: OpenBLAS's SSE3 kernels are its best");
    write_file("g.yaml", "name: g\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\nlengths: [100]\n");
    char out[8192], stored[256], want[128];
    cr_assert_eq(sh(out, sizeof out, "env -u OPENBLAS_CORETYPE LENX_TEST_OPENBLAS_CORE=Prescott "
                    "$L run g.yaml --db g.db --no-table"), 0, "%s", out);
    cr_expect_eq(count(out, "OpenBLAS picked its Prescott kernels"), 1, "%s", out);
    sql_text(stored, sizeof stored, "g.db", "select blas from runs");
    snprintf(want, sizeof want, "core=%s threading=openmp", best);
    cr_expect_str_eq(stored, want);
}

/* A portable sweep runs no OpenBLAS product (docs/numerics.md): a word on the
** kernels OpenBLAS runs would be noise there; a fast one still gets it. */
Test(blas, a_portable_sweep_says_nothing_of_openblas_kernels, .init = setup, .fini = teardown, .timeout = 60)
{
    const char *best = expected_core();
    write_file("p.yaml", "name: p\nnumerics: portable\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\n"
               "lengths: [100]\n");
    write_file("f.yaml", "name: f\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\nlengths: [100]\n");
    char out[8192];
    cr_assert_eq(sh(out, sizeof out, "env OPENBLAS_CORETYPE=Prescott LENX_TEST_OPENBLAS_CORE=Prescott "
                    "$L run p.yaml --db p.db --no-table"), 0, "%s", out);
    cr_expect(strstr(out, "OpenBLAS") == NULL, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "env OPENBLAS_CORETYPE=Prescott LENX_TEST_OPENBLAS_CORE=Prescott "
                    "$L run f.yaml --db f.db --no-table"), 0, "%s", out);
    if (best)
        cr_expect_eq(count(out, "lenx: warning: OpenBLAS runs its Prescott kernels"), 1, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "env OPENBLAS_CORETYPE=Prescott LENX_TEST_OPENBLAS_CORE=Prescott "
                    "$L run f.yaml --db f2.db --no-table --portable"), 0, "%s", out);
    cr_expect(strstr(out, "OpenBLAS") == NULL, "%s", out);
}

/* OPENBLAS_CORETYPE naming kernels wider than the CPU's vectors (a job script from an AVX-512 host run on an
** AVX2 one): lenx died of SIGILL (exit 132) in its first product. A fast score and a fast sweep are now
** refused with the reason and a hint, and nothing is stored; portable numerics, which runs no OpenBLAS
** product, still runs. Only where the CPU lacks AVX-512 is there a wider core type to name. */
Test(blas, a_coretype_wider_than_the_cpu_is_refused_not_a_sigill, .init = setup, .fini = teardown, .timeout = 60)
{
    const char *best = expected_core();
    if (best && strcmp(best, "Haswell") != 0)
        cr_skip_test("this CPU has AVX-512: OpenBLAS 0.3.21 has no wider kernels to name");
    static char out[65536], err[4096];
    cr_expect_eq(score(out, sizeof out, err, sizeof err, "env OPENBLAS_CORETYPE=SkylakeX"), 2, "%s%s", out, err);
    cr_expect(strstr(err, "lenx: error: OpenBLAS runs its SkylakeX kernels (OPENBLAS_CORETYPE=SkylakeX), which "
                     "use AVX-512") != NULL && strstr(err, "hint: unset OPENBLAS_CORETYPE") != NULL, "%s", err);
    write_file("f.yaml", "name: f\nmethods: [none]\ntasks:\n  - gaussian: {samples: 20}\nlengths: [100]\n");
    cr_expect_eq(sh(out, sizeof out, "env OPENBLAS_CORETYPE=SkylakeX $L run f.yaml --db f.db --no-table"), 2,
                 "%s", out);
    cr_expect(strstr(out, "illegal instruction") != NULL && !exists("f.db"), "%s", out);
    cr_expect_eq(sh(out, sizeof out, "env OPENBLAS_CORETYPE=SkylakeX $L run f.yaml --db p.db --no-table "
                    "--portable"), 0, "%s", out);
}
