/*
** methods/streaming.c - StreamingLLM: attention sinks plus a recent window,
** with positions re-indexed inside the cache.
**
** Xiao, Tian, Chen, Han, Lewis, "Efficient Streaming Language Models with
** Attention Sinks", ICLR 2024, arXiv 2309.17453, §3.2; mit-han-lab/streaming-llm
** (StartRecentKVCache, llama_pos_shift_attention_forward). The cache keeps the
** first S tokens (the sinks) and the last R, evicting after every token, so a
** query attends to S + R + 1 keys: the sinks and the R + 1 keys 0..R back,
** itself included. Keys are cached before RoPE and rotated to their slot
** index, the query to its own, so the recent keys keep their true distance and
** sink j sits at the slot distance min(i, S + R) − j, never farther than S + R.
** In the spec: visibility window R + 1 with S sinks, and a position map from
** distance R + 1 on with scale 1, shift 0, cap S + R (spec.h, struct lx_posmap).
** Identical to full attention while i <= S + R. Any S >= 0 with R >= 1 is a
** cache the reference accepts (start_size and recent_size are independent),
** S > R + 1 included: sinks inside the window simply keep their distance.
**
** R defaults to L − S − 1 (L = the training length), so a query sees at most L
** keys and every slot distance stays below L. The paper's examples use S = 4
** (the eval_long_ppl.py script defaults to S = 1, R = 255). Needs a position
** scheme that carries distances: rope, or a distance bias (alibi, sandwich,
** t5bias, kerple: the bias then sees the slot distance); not nope.
** Training-free. Rules, parameters and golden values:
** docs/methods.md#streaming.
*/
#include <string.h>

#include "methods/method.h"

struct streaming_params {
    long sinks;     /* S: the first S tokens stay visible */
    long recent;    /* R: the recent keys besides the query; 0 = L − S − 1 */
};

static const struct lx_param streaming_rows[] = {
    LX_P_INT(struct streaming_params, sinks, "4", 0, 1e12, LX_PF_SHOW,
             "S: attention-sink tokens kept at the start of the cache"),
    LX_P_INT(struct streaming_params, recent, "0", 0, 1e12, LX_PF_SHOW | LX_PF_AUTO,
             "R: recent keys kept besides the query; 0 = training length - S - 1"),
};

/* recent auto: L − S − 1, so a query sees at most L keys. */
static int streaming_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct streaming_params *p = params;
    if (p->recent)
        return LX_OK;
    long R = f->train_len - p->sinks - 1;
    if (R < 1)
        return lx_err(err, LX_EINVAL, "streaming: recent 0 means training length - sinks - 1 = %ld - %ld - 1 "
                      "= %ld, which is below 1\n  hint: give recent, e.g. streaming: {recent: 60}",
                      f->train_len, p->sinks, R);
    p->recent = R;
    return LX_OK;
}

static int streaming_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec,
                           struct lx_error *err)
{
    const struct streaming_params *p = params;
    if (!spec->positions || strcmp(spec->positions, "nope") == 0)
        return lx_err(err, LX_EINVAL, "method 'streaming' re-indexes positions, which needs a position scheme "
                      "that carries distances before it (rope, alibi, sandwich, t5bias or kerple), and %s\n"
                      "  hint: e.g. [rope, streaming]",
                      spec->positions ? "this stack has nope" : "no position scheme comes before it");
    int rc = lx_spec_claim(&spec->vis.method, "streaming", "the visible keys", err);
    if (rc == LX_OK)
        rc = lx_spec_claim_posmap(spec, "streaming", err);
    if (rc < 0)
        return rc;
    long R = p->recent;
    LX_ASSERT(R >= 1);  /* resolved */
    spec->vis.window = R + 1;
    spec->vis.sinks = p->sinks;
    spec->posmap = (struct lx_posmap){
        .method = "streaming", .from = R + 1, .scale = 1, .shift = 0, .cap = (double)(p->sinks + R),
    };
    return LX_OK;
}

const struct lx_method lx_method_streaming = {
    .name = "streaming",
    .summary = "StreamingLLM sinks + recent window, slot positions, Xiao et al. 2024 (arXiv 2309.17453)",
    .schema = LX_SCHEMA(streaming_rows, struct streaming_params, NULL),
    .kind = LX_KIND_INFERENCE,
    .needs = LX_CAP_MODEL,
    .resolve = streaming_resolve,
    .apply = streaming_apply,
};
