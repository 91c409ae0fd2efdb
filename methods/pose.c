/*
** methods/pose.c - PoSE, positional skip-wise training (Zhu et al., ICLR
** 2024, arXiv 2309.10400, §3.2, Eq. 3-5).
**
** Training windows keep the training length L_c, but their position ids are
** spread over a target length L_t: the window is cut into N chunks at random
** points, chunk i gets a skipping bias u_i ~ Uniform{u_{i−1} … L_t − L_c}
** (u_0 = 0), and its tokens positions u_i + st_i … u_i + st_i + l_i − 1, so
** every relative distance up to L_t − 1 is seen in training. The text stays
** contiguous (the paper's v_i = 0 ablation). The trainer draws the skips from
** the counter-based generator keyed on the model key, step and window
** (harness/engine/model/train.c); evaluation uses the plain positions 0 … T−1, and
** a RoPE rescaling (pi, yarn) can be stacked on top as in the paper.
** Construction, parameters and tested properties: docs/methods.md#pose.
*/
#include "methods/method.h"

struct pose_params {
    long chunks;    /* N */
    long target;    /* L_t; 0 = 16 × the training length; at most 2^30: the ids are ints */
};

static const struct lx_param pose_rows[] = {
    LX_P_INT(struct pose_params, chunks, "2", 1, 64, LX_PF_SHOW, "chunks N each training window is cut into"),
    LX_P_INT(struct pose_params, target, "0", 0, 1L << 30, LX_PF_SHOW | LX_PF_AUTO,
             "target length L_t the positions spread over, at most 2^30 (the ids are ints); "
             "0 = 16 x the training length"),
};

/* target auto: 16 x the training length. */
static int pose_resolve(void *params, const struct lx_facts *f, struct lx_error *err)
{
    struct pose_params *p = params;
    (void)err;
    if (p->target == 0)
        p->target = 16 * f->train_len;
    return LX_OK;
}

static int pose_check(const void *params, const struct lx_facts *f, struct lx_error *err)
{
    const struct pose_params *p = params;
    if (p->target < f->train_len)
        return lx_err(err, LX_EINVAL, "pose: target %ld is shorter than the training length %ld\n"
                      "  hint: target is the length the positions spread over, e.g. 16 x the training length",
                      p->target, f->train_len);
    if (lx_spec_check_train_target("pose", p->target, f, err) < 0)
        return LX_EINVAL;
    if (p->target > (1L << 30))
        return lx_err(err, LX_EINVAL, "pose: target %ld (16 x the training length %ld) is past 2^30 positions\n"
                      "  hint: give target explicitly, at most 1073741824", p->target, f->train_len);
    if (p->chunks > f->train_len)
        return lx_err(err, LX_EINVAL, "pose: %ld chunks do not fit in a window of %ld tokens\n"
                      "  hint: each chunk holds at least one token: at most %ld chunks (the paper's N = 2)",
                      p->chunks, f->train_len, f->train_len);
    return LX_OK;
}

static int pose_apply(const void *params, const struct lx_facts *f, struct lx_spec *spec, struct lx_error *err)
{
    const struct pose_params *p = params;
    int rc = lx_spec_claim_train_positions(spec, "pose", err);
    if (rc < 0)
        return rc;
    spec->pose.chunks = (int)p->chunks;
    spec->pose.target = p->target;
    return LX_OK;
}

const struct lx_method lx_method_pose = {
    .name = "pose",
    .summary = "PoSE skip-wise training positions over a target length, Zhu et al. 2024 (arXiv 2309.10400)",
    .schema = LX_SCHEMA(pose_rows, struct pose_params, NULL),
    .kind = LX_KIND_TRAINING,
    .needs = LX_CAP_MODEL,
    .resolve = pose_resolve,
    .check = pose_check,
    .apply = pose_apply,
};
