/*
** harness/engine/data/instance.c - instances (instance.h): releasing one, and
** fitting a byte instance to exactly `length` tokens of another tokenizer.
**
** A task writes its instance in bytes; for a tokenizer other than bytes the
** instance is re-encoded as [begin] + enc(prompt) + enc(answer), the prompt and
** the answer encoded apart (so the answer's span is known and decodes to the
** answer's text), and the byte length B the task is asked for is searched so
** that the tokens come to exactly `length`. Every token holds at least one
** byte, so B >= length; t(B) = the tokens of the byte instance of length B
** grows with B in steps of mostly 0 or 1 (the task's filler or haystack grows
** by a byte), so the smallest B with t(B) >= length is found by bisection and,
** when t jumps past length there, the bytes around it are tried. The task's
** draws depend on (key, sample) and not on the length, so every B builds the
** same instance with more or less filler, and depths stay fractions of it.
** A task's padding is a run of spaces that a byte-level tokenizer (GPT-2's
** pre-tokenizer, Qwen3's vocabulary) would merge into a few tokens, so one
** more unit of text (a line, a reply) would outgrow the pad it replaces and t
** would jump past length: a run of spaces is therefore encoded one token per
** space but the last, which stays with the text after it (as " word"). In a
** SentencePiece vocabulary without multi-space pieces (llama2.c's) these are
** the ids it gives anyway.
**
** The evaluation instances of the retrieval tasks (tasks/retrieval.c) and the
** training windows of a model's mixture (train.c) both come through here, so
** a model trained on a tokenizer meets the task in the tokens it is tested in.
*/
#include "harness/engine/data/instance.h"

#include <stdlib.h>
#include <string.h>

#include "harness/engine/tokenizers/tokenizer.h"

void lx_instance_release(struct lx_instance *in)
{
    if (!in)
        return;
    free(in->tok);
    free(in->golds);
    memset(in, 0, sizeof *in);
}

/* Append the ids of s[0, n) as a segment, a run of spaces one per space. */
static int encode_prompt(const struct lx_tokenizer *tk, const char *s, long n, struct lx_ids *out,
                         struct lx_error *err)
{
    long from = 0;
    int rc = LX_OK;
    for (long i = 0; i < n && rc == LX_OK; i++) {
        long j = i;
        while (j < n && s[j] == ' ')
            j++;
        if (j - i < 2)
            continue;
        rc = lx_tokenizer_encode(tk, s + from, (size_t)(i - from), LX_ENC_SEGMENT, out, err);
        for (long k = i; k < j - 1 && rc == LX_OK; k++)
            rc = lx_tokenizer_encode(tk, " ", 1, LX_ENC_SEGMENT, out, err);
        from = j - 1;
        i = j - 1;
    }
    return rc == LX_OK ? lx_tokenizer_encode(tk, s + from, (size_t)(n - from), LX_ENC_SEGMENT, out, err) : rc;
}

/* What lx_instance_fit searches over. */
struct fit {
    const struct lx_instance_src *src;
    const struct lx_tokenizer *tk;
};

/* The tokens of the byte instance of length B (0 on error); *out (may be
** NULL) receives the re-encoded instance. */
static long tokens_at(const struct fit *f, long B, struct lx_instance *out, struct lx_error *err)
{
    struct lx_instance b;
    if (f->src->bytes(f->src->ctx, B, &b, err) < 0)
        return 0;
    char *text = lx_xmalloc((size_t)b.n);
    for (long i = 1; i < b.n; i++) {
        LX_ASSERT(b.tok[i] >= 0 && b.tok[i] < 256);     /* tasks write bytes after BOS */
        text[i] = (char)b.tok[i];
    }
    struct lx_ids pv = {0};
    int32_t *prompt, *answer = NULL;
    long np = encode_prompt(f->tk, text + 1, b.answer_off - 1, &pv, err),
         na = np < 0 ? np : lx_tok_encode(f->tk, text + b.answer_off, b.n - b.answer_off, &answer, err);
    free(text);
    prompt = pv.id;
    np = np < 0 ? np : pv.n;
    if (np < 0 || na < 0) {
        lx_instance_release(&b);
        free(prompt);
        return 0;
    }
    if (out && na <= LX_MAX_ANSWER) {
        *out = b;
        out->tok = lx_xmalloc(sizeof(int) * (size_t)(1 + np + na));
        out->tok[0] = lx_tok_begin(f->tk);
        memcpy(out->tok + 1, prompt, sizeof(int) * (size_t)np);
        memcpy(out->tok + 1 + np, answer, sizeof(int) * (size_t)na);
        out->n = 1 + np + na;
        out->answer_off = 1 + np;
    }
    lx_instance_release(&b);
    free(prompt);
    free(answer);
    if (na > LX_MAX_ANSWER)
        return lx_err(err, LX_EINVAL, "%s: the answer takes %ld tokens, more than %d", f->src->name, na,
                      LX_MAX_ANSWER), 0;
    return 1 + np + na;
}

/* The byte length whose instance has exactly `length` tokens, or -1 (err
** filled) when there is none; 0 when the task refused a length. */
static long fit_bytes(const struct fit *f, long length, struct lx_error *err)
{
    long lo = length, t_lo = tokens_at(f, lo, NULL, err), hi = lo, t_hi = t_lo;
    if (t_lo == 0)
        return 0;
    while (t_hi < length) {     /* grow by the bytes per token seen so far */
        lo = hi, t_lo = t_hi;
        hi = lo + (long)((double)(length - t_lo) * (double)lo / (double)t_lo) + 1;
        if (hi > 64 * length + 4096)
            return lx_err(err, LX_ERUN, "%s: no prompt of %ld %s tokens: %ld bytes give only %ld", f->src->name,
                          length, f->tk->ops->kind, lo, t_lo), -1;
        if ((t_hi = tokens_at(f, hi, NULL, err)) == 0)
            return 0;
    }
    while (hi - lo > 1 && t_lo != length) {    /* t(lo) < length <= t(hi) */
        long mid = lo + (hi - lo) / 2, t = tokens_at(f, mid, NULL, err);
        if (t == 0)
            return 0;
        *(t < length ? &lo : &hi) = mid;
        t_lo = t < length ? t : t_lo;
        t_hi = t < length ? t_hi : t;
    }
    long best = t_lo == length ? lo : t_hi == length ? hi : -1;
    for (long d = 1; best < 0 && d <= 64; d++)      /* t jumped past length at hi: try the bytes around */
        for (int sgn = -1; best < 0 && sgn <= 1; sgn += 2) {
            long t = hi + sgn * d >= length ? tokens_at(f, hi + sgn * d, NULL, err) : -1;
            if (t == 0)
                return 0;   /* an instance the tokenizer refused: its error, not "no prompt" */
            best = t == length ? hi + sgn * d : best;
        }
    if (best < 0)
        lx_err(err, LX_ERUN, "%s: no prompt of exactly %ld %s tokens: %ld bytes give %ld, %ld give %ld\n"
               "  hint: try a length one more or less", f->src->name, length, f->tk->ops->kind, hi - 1, t_lo, hi,
               t_hi);
    return best;
}

int lx_instance_fit(const struct lx_instance_src *src, const struct lx_tokenizer *tk, long length,
                    struct lx_instance *out, struct lx_error *err)
{
    memset(out, 0, sizeof *out);
    if (tk->is_byte)
        return src->bytes(src->ctx, length, out, err);
    struct fit f = {.src = src, .tk = tk};
    long best = fit_bytes(&f, length, err);
    if (best == 0)
        return LX_EINVAL;
    if (best < 0)
        return LX_ERUN;
    long got = tokens_at(&f, best, out, err);
    LX_ASSERT(got == length);
    return LX_OK;
}
