/*
** tasks/ppl_windows.c - the windows of the ppl task's protocols (see ppl_windows.h).
*/
#include "tasks/ppl_windows.h"

#include <stdlib.h>
#include <string.h>

static int add_win(struct lx_ppl_plan *pl, const int *src, long n, long lo, long hi, double weight)
{
    if (pl->max > 0 && pl->n >= pl->max)
        return 0;
    if (pl->n == pl->cap) {
        pl->cap = pl->cap ? 2 * pl->cap : 64;
        pl->win = lx_xrealloc(pl->win, sizeof *pl->win * (size_t)pl->cap);
    }
    pl->win[pl->n++] = (struct lx_ppl_win){.src = src, .n = n, .lo = lo, .hi = hi, .weight = weight};
    return 1;
}

/* The documents' tokens back to back, after BOS when bos >= 0: the one
** stream of the concatenating protocols; *n its length. */
int *lx_ppl_stream(const struct lx_corpus_tokens *c, int bos, long *n)
{
    int *s = lx_xmalloc(sizeof *s * (size_t)(c->n_tokens + 1));
    *n = 0;
    if (bos >= 0)
        s[(*n)++] = bos;
    for (int d = 0; d < c->c->n_docs; d++) {
        memcpy(s + *n, c->ids[d], sizeof *s * (size_t)c->n[d]);
        *n += c->n[d];
    }
    return s;
}

/* llama.cpp perplexity: chunk i = stream[iL, (i+1)L), first token overwritten
** by BOS, logits at L/2 .. L-2 score the tokens after them. */
void lx_ppl_llamacpp(struct lx_ppl_plan *pl, const int *s, long ns, long L)
{
    for (long i = 0; ns >= 2 * L && i < ns / L; i++)     /* llama.cpp refuses fewer than 2 n_ctx tokens */
        if (!add_win(pl, s + i * L, L, L / 2, L - 1, 0.0))
            break;
}

/* Hugging Face's strided window: [begin, end = min(begin + L, ns)), trg =
** end - the previous end labels at its tail, label j (j >= 1) scored at
** position j - 1; the window's mean weighs trg - 1 (the guide's
** num_loss_tokens). */
void lx_ppl_hf_stride(struct lx_ppl_plan *pl, const int *s, long ns, long L, long stride)
{
    for (long begin = 0, prev = 0; begin < ns; begin += stride) {
        long end = begin + L < ns ? begin + L : ns, n = end - begin, trg = end - prev;
        long lo = n - trg > 1 ? n - trg - 1 : 0;
        if (n - 1 > lo && !add_win(pl, s + begin, n, lo, n - 1, (double)(trg - 1)))
            break;
        prev = end;
        if (end == ns)
            break;
    }
}

/* YaRN --truncate: each document's first min(n, L-1) tokens after BOS, all scored. */
void lx_ppl_yarn_truncate(struct lx_ppl_plan *pl, const struct lx_corpus_tokens *c, long L)
{
    for (int d = 0; d < c->c->n_docs; d++) {
        long m = c->n[d] < L - 1 ? c->n[d] : L - 1;
        if (m > 0 && !add_win(pl, c->ids[d], m, 0, m, 1.0))
            break;
    }
}

/* LongLoRA eval.py: starts 0, 256, ... below ns - L, the last dropped;
** labels 1 .. L-1 of each window scored. */
void lx_ppl_longlora(struct lx_ppl_plan *pl, const int *s, long ns, long L)
{
    long k = ns > L ? (ns - L + LX_LONGLORA_STEP - 1) / LX_LONGLORA_STEP - 1 : 0;
    for (long i = 0; i < k; i++)
        if (!add_win(pl, s + i * LX_LONGLORA_STEP, L, 0, L - 1, 1.0))
            break;
}

void lx_ppl_lenx(struct lx_ppl_plan *pl, const struct lx_corpus_tokens *c, long max, long L)
{
    long nw = lx_tokens_windows(c, L, max, NULL);
    struct lx_window *w = lx_xcalloc((size_t)(nw > 0 ? nw : 1), sizeof *w);
    lx_tokens_windows(c, L, max, w);
    for (long i = 0; i < nw; i++)
        add_win(pl, c->ids[w[i].doc] + w[i].off, L, 0, L, (double)L);
    free(w);
}

