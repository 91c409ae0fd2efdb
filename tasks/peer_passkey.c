/*
** tasks/peer_passkey.c - the pass-key test cases of the peers whose prompt is
** landmark attention's generate_prompt (peer.h): landmark's own
** llama/run_test.py, YaRN's eval/passkey.py and LongLoRA's
** passkey_retrivial.py. They share the template and differ in how many filler
** characters a length gives, the ranges of their draws and how many times the
** filler sentence is repeated (docs/tasks.md#protocol-presets).
*/
#include "tasks/peer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/core/rng.h"
#include "harness/engine/tokenizers/tokenizer.h"

static const char garbage[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
                              "again.";
#define UNIT ((long)sizeof garbage)     /* the sentence and the joining space */

/* "\n".join([description, filler[:prefix], info line, filler[:n - prefix],
** question]) into b, the filler " ".join([garbage] * reps); the key as gold. */
static void passkey_case(struct lx_peer_case *out, long n, long prefix, long pass)
{
    struct lx_buf *b = &out->prompt;
    lx_buf_reset(b);
    lx_buf_puts(b, "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. I "
                "will quiz you about the important information there.\n");
    for (int part = 0; part < 2; part++) {
        for (long i = 0, k = part ? n - prefix : prefix; i < k; i++)
            lx_buf_putn(b, i % UNIT == UNIT - 1 ? " " : garbage + i % UNIT, 1);
        if (!part)
            lx_buf_printf(b, "\nThe pass key is %ld. Remember it. %ld is the pass key.\n", pass, pass);
    }
    lx_buf_puts(b, "\nWhat is the pass key? The pass key is");
    char num[32];
    snprintf(num, sizeof num, "%ld", pass);
    lx_buf_reset(&out->golds);
    out->n_golds = 0;
    lx_peer_add_gold(out, num, strlen(num));
}

/* n filler characters fit a filler of `reps` sentences ("assert len(garbage_inf) >= n_garbage"). */
static int filler_holds(const char *peer, long n, long reps, struct lx_error *err)
{
    if (n <= UNIT * reps - 1)
        return LX_OK;
    return lx_err(err, LX_EINVAL, "%s: %ld filler characters; the peer's filler (%ld sentences) holds at most %ld\n"
                  "  hint: use a shorter length", peer, n, reps, UNIT * reps - 1);
}

int lx_peer_landmark_check(long length, struct lx_error *err)
{
    return length < 0 ? lx_err(err, LX_EINVAL, "landmark: %ld filler characters", length)
                      : filler_holds("landmark", length, 2000, err);
}

int lx_peer_landmark(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                     struct lx_peer_case *out, struct lx_error *err)
{
    (void)tk, (void)data;   /* landmark counts characters */
    int rc = lx_peer_landmark_check(length, err);
    if (rc < 0)
        return rc;
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x6c616e646d61726bULL, (uint32_t)sample, LX_RNG_DATA);
    long prefix = (long)(lx_rng_uniform(&r) * (double)(length + 1)), pass = 1 + (long)(lx_rng_uniform(&r) * 50000);
    passkey_case(out, length, prefix, pass);
    return LX_OK;
}

/* ---- YaRN eval/passkey.py ------------------------------------------------------ */

#define YARN_STEP 128       /* its --length-step */
#define YARN_REPS 10000     /* " ".join([garbage] * 10000) */

/* tk's count of the prompt with n filler characters drawn as u, pass (BOS
** included: len(tokenizer.encode(prompt))); < 0 on text tk refuses. */
static long yarn_tokens(const struct lx_tokenizer *tk, long n, double u, long pass, struct lx_peer_case *tmp,
                        struct lx_error *err)
{
    passkey_case(tmp, n, (long)(u * (double)(n + 1)), pass);
    int *ids = NULL;
    long t = lx_tok_prompt(lx_tok_or_byte(tk), lx_buf_str(&tmp->prompt), tmp->prompt.len, &ids, err);
    free(ids);
    return t;
}

/* The peer's n_garbage for a target of `length` tokens: the step of
** YARN_STEP characters before the first whose prompt reaches the target,
** found on one draw of the cell (its key, not the case). The peer scans n =
** 128, 256, ... with a fresh draw each; here an exponential then a binary
** search on the same grid, which finds the same step wherever the count
** grows with n. */
long lx_peer_yarn_fit(long length, uint64_t key, const struct lx_tokenizer *tk, struct lx_error *err)
{
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x7961726e66697421ULL, 0, LX_RNG_DATA);
    double u = lx_rng_uniform(&r);
    long pass = 1 + (long)(lx_rng_uniform(&r) * 50000), most = (UNIT * YARN_REPS - 1) / YARN_STEP, lo = 0, hi = 1, t;
    struct lx_peer_case tmp = {0};
    if ((t = yarn_tokens(tk, 0, u, pass, &tmp, err)) >= length)
        t = lx_err(err, LX_EINVAL, "yarn: length %ld: the prompt without filler is already %ld tokens\n"
                   "  hint: use a length over %ld", length, t, t);
    while (t >= 0 && t < length && (t = yarn_tokens(tk, hi * YARN_STEP, u, pass, &tmp, err)) >= 0 && t < length) {
        if (hi == most)
            t = lx_err(err, LX_EINVAL, "yarn: length %ld: the peer's whole filler (%ld sentences) makes a prompt "
                       "of %ld tokens, fewer\n  hint: use a length of at most %ld", length, (long)YARN_REPS, t, t);
        lo = hi, hi = hi * 2 < most ? hi * 2 : most;
    }
    while (t >= 0 && hi - lo > 1) {     /* tokens(lo) < length <= tokens(hi) */
        long mid = lo + (hi - lo) / 2;
        if ((t = yarn_tokens(tk, mid * YARN_STEP, u, pass, &tmp, err)) >= 0)
            *(t < length ? &lo : &hi) = mid;
    }
    lx_buf_free(&tmp.prompt), lx_buf_free(&tmp.golds);
    return t < 0 ? t : lo * YARN_STEP;
}

int lx_peer_yarn(const char *data, long n, uint64_t key, long sample, const struct lx_tokenizer *tk,
                 struct lx_peer_case *out, struct lx_error *err)
{
    (void)data, (void)tk, (void)err;    /* n, the filler characters, comes from lx_peer_yarn_fit */
    struct lx_rng r;
    lx_rng_init(&r, key ^ 0x7961726e70617373ULL, (uint32_t)sample, LX_RNG_DATA);
    long prefix = (long)(lx_rng_uniform(&r) * (double)(n + 1)), pass = 1 + (long)(lx_rng_uniform(&r) * 50000);
    passkey_case(out, n, prefix, pass);
    return LX_OK;
}

/* ---- LongLoRA passkey_retrivial.py ------------------------------------------------ */

#define LONGLORA_REPS 5000  /* " ".join([garbage] * 5000) */

/* The filler characters of a length: int(3.75 * L // 1024 * 1024). */
static long longlora_n(long length)
{
    return (long)floor(3.75 * (double)length / 1024.0) * 1024;
}

int lx_peer_longlora_check(long length, struct lx_error *err)
{
    if (longlora_n(length) < 1)
        return lx_err(err, LX_EINVAL, "longlora: length %ld gives n_garbage = int(3.75 * %ld // 1024 * 1024) = 0, "
                      "and the peer's numpy randint(0, 0) fails\n  hint: use a length of at least 274", length,
                      length);
    return filler_holds("longlora", longlora_n(length), LONGLORA_REPS, err);
}

int lx_peer_longlora(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                     struct lx_peer_case *out, struct lx_error *err)
{
    (void)data, (void)tk;   /* the filler follows from the length by a ratio */
    long n = longlora_n(length);
    int rc = lx_peer_longlora_check(length, err);
    if (rc < 0)
        return rc;
    struct lx_rng r;    /* numpy's randint(low, high) draws from [low, high) */
    lx_rng_init(&r, key ^ 0x6c6f6e676c6f7261ULL, (uint32_t)sample, LX_RNG_DATA);
    long prefix = (long)(lx_rng_uniform(&r) * (double)n), pass = 1 + (long)(lx_rng_uniform(&r) * 49999);
    passkey_case(out, n, prefix, pass);
    return LX_OK;
}
