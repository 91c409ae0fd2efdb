/*
** harness/engine/model/decoding.h - one token at a time through a causal
** model against its KV cache (the row kernel is kernels/decode.h), the
** sampler, and generation by the cache or by full passes (the reference).
** What the model and the cache share is kvcache.h; the forward pass saves its
** rows through lx_kvcache_put, so the model never includes this file.
*/
#ifndef LX_DECODING_H
#define LX_DECODING_H

#include <stdint.h>

#include "harness/engine/model/kvcache.h"
#include "harness/engine/model/model.h"
#include "harness/engine/model/pilot.h"

/* How greedy tokens after the first are produced. */
enum lx_decode {
    LX_DECODE_CACHE,    /* one row per token through the KV cache */
    LX_DECODE_FULL,     /* a full forward pass per token: the reference */
};

/* How the next token is chosen from its logits. */
struct lx_sampler {
    double temperature; /* 0 = greedy (the first argmax); > 0: a draw from softmax(logits / temperature) */
    uint64_t seed;      /* Philox key of the draws: generated token k uses stream k (LX_RNG_SAMPLE) */
    long top_k;         /* > 0: draw only among the logits >= the top_k-th largest (Hugging Face's
                        ** top-k warper); 0 = all */
};

/* Weights from which a decoding step starts on the OpenMP team instead of one thread (512 MiB);
** a pilot (pilot.h) then times both and keeps the faster. */
#define LX_DECODE_TEAM_BYTES (512.0 * 1024 * 1024)

/* Token `token` at position pos of slot `slot`, whose rows [0, pos) are
** cached (pos <= len, pos < T): its key and value rows enter the cache
** (len = pos + 1) and logits (V) get its next-token logits. */
void lx_decode_step(float *logits, const struct lx_model *m, const struct lx_spec *spec, struct lx_kvcache *c,
                    int slot, long pos, int token);
/* lx_decode_step on one thread (solo) or the OpenMP team: the same bits. */
void lx_decode_step_on(float *logits, const struct lx_model *m, const struct lx_spec *spec, struct lx_kvcache *c,
                       int slot, long pos, int token, int solo);
/* A pilot for m's decoding steps (pilot.h): starting in the mode lx_decode_step
** picks (a forced mode, else by the weights' size as above), probing unless
** lx_pilot_force forced a mode or there is one thread. The bits are the same
** either way (decoding.c). */
void lx_pilot_start(struct lx_pilot *p, const struct lx_model *m);

/* The token sampler s picks for generated token k from logits (V) (p (V) scratch):
** the argmax at temperature 0, else the inverse CDF of softmax(logits / T),
** over the top_k largest logits (ties kept) when top_k > 0, at one uniform of
** Philox(seed, stream k): a pure function of (logits, s, k). */
int lx_sample(const float *logits, long V, const struct lx_sampler *s, long k, double *p);

/* Told of each generated token as it is chosen (k = 0 the first, from the
** prompt's pass): a nonzero return stops generation after token k (token
** NULL: told nothing). */
struct lx_gen_sink {
    int (*token)(void *arg, long k, int id);
    void *arg;
    struct lx_pilot *pilot;     /* NULL, or the pilot the steps run by (lx_pilot_start; its counts read after) */
};

/* How the tokens after a known one are produced: the one decode loop, for
** generation and for the answers the retrieval tasks read. */
struct lx_decoder {
    enum lx_decode mode;
    struct lx_kvcache *c;       /* cache: the window's rows before pos0 + k are in slot `slot` */
    int slot;
    struct lx_acts *one;        /* full: activations of a pass over one window (B = 1) */
    int *buf;                   /* full: (T) the window's tokens, rows past pos0 + k overwritten */
    const struct lx_sampler *smp;   /* NULL = greedy */
    float *lg;                  /* cache: (V) one step's logits */
    double *p;                  /* (V) the sampler's scratch (unused when greedy) */
    long steps;                 /* decode steps (cache) or full passes (full) run: added to */
    const struct lx_gen_sink *sink; /* NULL, or told of each token out[k + 1] as it is chosen */
    struct lx_pilot *pilot;     /* cache: the team or one thread for each step (NULL: the call's own) */
    long n_out;                 /* out: the tokens of out filled (n unless the sink stopped it) */
};

/* out[k] is the token at position pos0 + k of the window; fill out[k+1, n)
** with the tokens that follow, token j drawn by the sampler as generated
** token j (lx_sample), or out[k+1, d->n_out) when the sink stops it. Full mode checks every pass's logits are finite
** (LX_ERUN otherwise). */
int lx_decode_continue(const struct lx_model *m, const struct lx_spec *spec, struct lx_decoder *d, long pos0,
                       int *out, long k, long n, struct lx_error *err);

/* Greedy generation: out[0, n) = the n tokens a causal model continues
** prompt[0, n_prompt) with, by the KV cache or by one full forward pass
** per token (LX_DECODE_FULL, the reference). LX_EINVAL for an mlm model or
** an empty prompt; LX_ENOMEM when the passes do not fit. */
int lx_generate(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt, long n,
                int *out, enum lx_decode mode, struct lx_error *err);
/* The same with a sampler (NULL = greedy); mode as above. */
int lx_generate_with(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt, long n,
                     int *out, enum lx_decode mode, const struct lx_sampler *s, struct lx_error *err);
/* The same, telling sink (NULL: nobody) of each token as it is chosen;
** *n_out gets the tokens of out filled: n, or fewer when the sink stopped
** generation (the tokens before the stop are those of a run to n). */
int lx_generate_stream(const struct lx_model *m, const struct lx_spec *spec, const int *prompt, long n_prompt, long n,
                       int *out, enum lx_decode mode, const struct lx_sampler *s, const struct lx_gen_sink *sink,
                       long *n_out, struct lx_error *err);

#endif
