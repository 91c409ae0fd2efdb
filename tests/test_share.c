/*
** tests/test_share.c - a loop's items shared by a team, each thread's own
** part first, then the others' rests from their ends
** (harness/engine/kernels/share.h): the order one caller takes them in,
** worked by hand; every item exactly once on real teams, with parts no thread
** owns; a thread held back until the other has taken everything; and the
** products that share their rows giving one thread's bits on any team.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/half.h"
#include "harness/core/rng.h"
#include "harness/engine/kernels/numerics.h"
#include "harness/engine/kernels/share.h"
#include "harness/engine/kernels/wprod.h"
#include "tests/qblocks.h"

/* 3 parts of 11 items in chunks of 2: chunks 0-5 ([10, 11) the last, one item), parted [0, 2), [2, 4),
** [4, 6). Thread 1 alone takes its own 2 and 3, then from the back of the part with the most left (the
** first such on a tie): part 0's 1 (2 left against part 2's 2: the first), part 2's 5, part 0's 0, part 2's 4. */
Test(share, one_callers_order_by_hand)
{
    struct lx_share s;
    lx_share_init(&s, 11, 2, 3);
    static const long want[][2] = {{4, 6}, {6, 8}, {2, 4}, {10, 11}, {0, 2}, {8, 10}};
    long i0, i1;
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        cr_assert(lx_share_next(&s, 1, &i0, &i1), "take %zu: none left", k);
        cr_expect(i0 == want[k][0] && i1 == want[k][1], "take %zu: [%ld, %ld), want [%ld, %ld)", k, i0, i1,
                  want[k][0], want[k][1]);
    }
    cr_expect_not(lx_share_next(&s, 1, &i0, &i1), "all taken");
    cr_expect_not(lx_share_next(&s, 0, &i0, &i1), "all taken, for another thread too");
    lx_share_init(&s, 0, 4, 2);
    cr_expect_not(lx_share_next(&s, 0, &i0, &i1), "no items");
}

/* Teams of 1-4 threads taking items of n in chunks: each item once; planned for more threads than the
** team has (parts no thread owns) and for more than LX_SHARE_PARTS (threads that own no part). */
Test(share, every_item_once_on_a_team)
{
    static const long ns[] = {1, 7, 64, 1000, 100003};
    static const long chunks[] = {1, 3, 64};
    static const int planned[] = {1, 2, 3, 5, 100};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof chunks / sizeof *chunks; b++)
            for (size_t c = 0; c < sizeof planned / sizeof *planned; c++)
                for (int team = 1; team <= 4; team++) {
                    long n = ns[a];
                    _Atomic int *seen = calloc((size_t)n, sizeof *seen);
                    struct lx_share s;
                    lx_share_init(&s, n, chunks[b], planned[c]);
#pragma omp parallel num_threads(team)
                    {
                        long i0, i1;
                        while (lx_share_next(&s, omp_get_thread_num(), &i0, &i1)) {
                            if (i0 < 0 || i1 > n || i1 - i0 < 1 || i1 - i0 > chunks[b])
                                atomic_fetch_add(&seen[0], 1000);     /* fails below */
                            for (long i = i0; i < i1 && i < n; i++)
                                atomic_fetch_add(&seen[i], 1);
                        }
                    }
                    for (long i = 0; i < n; i++)
                        cr_assert_eq(seen[i], 1, "n %ld, chunk %ld, planned %d, team %d: item %ld taken %d times", n,
                                     chunks[b], planned[c], team, i, (int)seen[i]);
                    free(seen);
                }
}

/* A team of two where thread 1 starts only once thread 0 has run out: thread 0 takes every item, its own
** part front to back, then thread 1's chunks from the back; thread 1 finds none. */
Test(share, a_thread_held_back_leaves_its_part_to_the_other)
{
    enum { N = 40, CHUNK = 4 };
    struct lx_share s;
    lx_share_init(&s, N, CHUNK, 2);
    long order[N / CHUNK];
    int got = 0, late = -1, team = 0;
    _Atomic int done = 0;
#pragma omp parallel num_threads(2)
    {
        long i0, i1;
        if (omp_get_thread_num() == 0) {
            team = omp_get_num_threads();
            while (lx_share_next(&s, 0, &i0, &i1))
                order[got++] = i0;
            atomic_store(&done, 1);
        } else {
            while (!atomic_load(&done))
                ;
            late = lx_share_next(&s, 1, &i0, &i1);
        }
    }
    if (team < 2)
        cr_skip_test("OpenMP gave a team of one thread");
    cr_assert_eq(got, N / CHUNK);
    for (int k = 0; k < got; k++) {
        long want = k < 5 ? k * CHUNK : (14 - k) * CHUNK;     /* chunks 0-4, then 9, 8, 7, 6, 5 */
        cr_expect_eq(order[k], want, "take %d: item %ld, want %ld", k, order[k], want);
    }
    cr_expect_eq(late, 0, "the held-back thread found none left");
}

static void restore(void)
{
    lx_acts_llamacpp_set(0);
    omp_set_num_threads(1);
}

/* The products that share their rows (a few rows' integer dots and half dots): the same bits on teams
** of 1-4 threads, every output written (y starts as NaN), 1,000 rows of 512 so several chunks a thread. */
Test(share, shared_products_are_one_threads_bits, .fini = restore)
{
    enum { K = 512, N = 1000, M = 3 };
    struct lx_rng g;
    lx_rng_init(&g, 41, 0, 0);
    float *x = malloc(sizeof(float) * M * K), *y[4];
    for (long i = 0; i < (long)M * K; i++)
        x[i] = (float)lx_rng_normal(&g);
    static const int types[] = {LX_DT_Q4_K, LX_DT_Q6_K, LX_DT_Q8_0, LX_DT_BF16, LX_DT_F16};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (int acts = 0; acts < 2; acts++) {
            int t = types[ti];
            void *b;
            if (t == LX_DT_BF16 || t == LX_DT_F16) {
                float *w = malloc(sizeof(float) * N * K);
                for (long i = 0; i < (long)N * K; i++)
                    w[i] = (float)lx_rng_normal(&g);
                b = malloc(lx_dtype_bytes(t, (size_t)N * K));
                lx_f32_to_type(b, w, t, (size_t)N * K);
                free(w);
            } else {
                b = qblocks_random(t, (size_t)N * K / lx_dtype_block(t), 2, 2, &g);
            }
            struct lx_wmat W = {b, t, 0, NULL, 0};
            lx_acts_llamacpp_set(acts);
            for (int team = 1; team <= 4; team++) {
                y[team - 1] = malloc(sizeof(float) * M * N);
                for (long i = 0; i < (long)M * N; i++)
                    y[team - 1][i] = NAN;
                omp_set_num_threads(team);
                lx_wlinear(y[team - 1], N, x, K, W, M, K, N, 0.0f);
            }
            for (long i = 0; i < (long)M * N; i++)
                cr_assert(isfinite(y[0][i]), "%s, activations %d: output %ld not written", lx_dtype_name(t), acts, i);
            for (int team = 2; team <= 4; team++)
                cr_assert_eq(memcmp(y[0], y[team - 1], sizeof(float) * M * N), 0,
                             "%s, activations %d: %d threads differ from one", lx_dtype_name(t), acts, team);
            for (int team = 0; team < 4; team++)
                free(y[team]);
            free(b);
        }
    free(x);
}
