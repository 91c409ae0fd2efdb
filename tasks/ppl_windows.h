/*
** tasks/ppl_windows.h - the windows of the ppl task's protocols
** (tasks/ppl.c, docs/tasks.md#ppl-protocols): where each window lies in a
** document or in the one stream of concatenated documents, how many of its
** tokens the model reads and which positions are scored, laid out as each
** peer's evaluation code lays them out. Pure functions of the tokens and the
** length; tests/ref/ppl_ref.py lays the same windows out independently.
**
** A window's input convention (is BOS prepended, does it overwrite the first
** token, does position t predict src[t] or src[t+1]) belongs to the protocol
** and is applied by tasks/ppl.c when it fills the window.
*/
#ifndef LX_PPL_WINDOWS_H
#define LX_PPL_WINDOWS_H

#include "harness/engine/data/corpus.h"

#define LX_LONGLORA_STEP 256    /* LongLoRA eval.py's sliding_window */

/* One window: the model's input is src[0, n) (lenx and yarn_truncate: [BOS,
** src[0, n-1)]), padded to the length, and positions [lo, hi) are scored. */
struct lx_ppl_win {
    const int *src;     /* the window's first token in a document or the stream */
    long n;             /* input tokens, <= the length; the rest is padding, never scored */
    long lo, hi;        /* scored positions */
    double weight;      /* the weight of the window's mean NLL in nll (weighted protocols) */
};

/* The windows of a protocol, appended to *win (n of them, cap allocated). */
struct lx_ppl_plan {
    struct lx_ppl_win *win;
    long n, cap;
    long max;           /* at most this many (0 = all) */
};

/* The documents' tokens back to back, after BOS when bos >= 0: the one
** stream of the concatenating protocols (malloc'd); *n its length. */
int *lx_ppl_stream(const struct lx_corpus_tokens *c, int bos, long *n);

/* lenx: disjoint windows of L per document, at most max spread over them
** (lx_tokens_windows), every position scored; input [BOS, src...]. */
void lx_ppl_lenx(struct lx_ppl_plan *pl, const struct lx_corpus_tokens *c, long max, long L);

/* llama.cpp perplexity: chunks [iL, (i+1)L) of s[0, ns), positions L/2 ..
** L-2 scoring the next token; the first token is overwritten by BOS. None
** when ns < 2L, which llama.cpp refuses. */
void lx_ppl_llamacpp(struct lx_ppl_plan *pl, const int *s, long ns, long L);

/* The transformers guide's strided windows of at most L moving by stride,
** weighted by their labels less one; no BOS. */
void lx_ppl_hf_stride(struct lx_ppl_plan *pl, const int *s, long ns, long L, long stride);

/* YaRN --truncate: each document's first min(n, L-1) tokens, all scored; input [BOS, src...]. */
void lx_ppl_yarn_truncate(struct lx_ppl_plan *pl, const struct lx_corpus_tokens *c, long L);

/* LongLoRA eval.py: windows of L every 256 tokens below ns - L, the last
** dropped, positions 0 .. L-2 scoring the next token; no BOS. */
void lx_ppl_longlora(struct lx_ppl_plan *pl, const int *s, long ns, long L);

#endif
