/*
** harness/engine/kernels/tiled_far.c - the tiled forward's far-key rows (a
** position map's: ReRoPE, Self-Extend, DCA, StreamingLLM's re-indexed sinks,
** LM-Infinite's global keys; spec.h, struct lx_posmap), once per call: q and k
** turned to the map's positions, the keys once per key/value head and again as
** the tile kernel's panels, and the products of far tiles on them (tiled.c
** calls them; attention.h, lx_tile_rot_floats, says how much they take).
*/
#include "harness/engine/kernels/tiled_impl.h"

#include "harness/core/half.h"
#include "harness/engine/kernels/gemm.h"

/* One key/value head's T keys packed as the kernel's panels (gemm.h), as ws->kpack holds the near
** ones; 0 when D is not whole panels. */
static size_t panel_floats(int T, int D)
{
    return D % LX_GEMM_NR ? 0 : lx_gemm_bt_floats(T, D);
}

/* Floats of one triangle's far-key rows: its queries' and keys' rows, then its keys as panels. */
static size_t rot_part_floats(int T, int H, int KV, int D)
{
    return (size_t)T * (size_t)(H + KV) * (size_t)D + (size_t)KV * panel_floats(T, D);
}

size_t lx_tile_rot_floats(const struct lx_spec *spec, int T, int H, int KV, int D, int causal)
{
    return spec->posmap.method && spec->rotary.n_pairs ? (causal ? 1 : 2) * rot_part_floats(T, H, KV, D) : 0;
}

/* Row t of head h in part `which` of the far-key rows (D floats): 0 and 1 are
** the queries (H heads) and keys (KV heads: h is the key/value head) turned for
** the lower far part, 2 and 3 for the upper (bidirectional rows only). */
static float *rot_row(const struct tiled *x, int which, int h, long t)
{
    float *part = x->ws->rot + (size_t)(which / 2) * rot_part_floats(x->T, x->H, x->KV, x->D);
    return part + ((which % 2 ? (long)x->H * x->T : 0) + (long)h * x->T + t) * x->D;
}

/* Key/value head g's far keys of a triangle (part 0 lower, 1 upper) packed as the kernel's panels, from
** key 0; NULL when D is not whole panels. */
static float *rot_panels(const struct tiled *x, int part, int g)
{
    if (!panel_floats(x->T, x->D))
        return NULL;
    float *p = x->ws->rot + (size_t)part * rot_part_floats(x->T, x->H, x->KV, x->D);
    return p + (size_t)x->T * (size_t)(x->H + x->KV) * (size_t)x->D + (size_t)g * panel_floats(x->T, x->D);
}

/* Row src (D floats) turned by cs (lx_rotary_angles) into dst, rounded to bf16 in numerics bf16 (the far
** products read bf16 values as the near ones). */
static void turn_row(const struct tiled *x, const float *src, float *dst, const double *cs)
{
    double r[2 * LX_SPEC_MAX_PAIRS + 2];
    for (int d = 0; d < x->D; d++)
        r[d] = src[d];
    lx_rotary_turn_by(r, &x->spec->rotary, cs);
    for (int d = 0; d < x->D; d++)
        dst[d] = (float)r[d];
    if (x->bf16)
        lx_round_bf16_n(dst, (size_t)x->D);
}

/* The far-key rows: q and k turned from their window position t to the
** posmap's (lx_posmap_pos), shifted for the query of a lower pair and the key
** of an upper one; keys once per key/value head, then packed as panels. The
** angles of a position are taken once for all its heads. */
void lx_tiled_far_rows(const struct tiled *x)
{
    const struct lx_posmap *pm = &x->spec->posmap;
    long parts = x->causal ? 1 : 2;     /* causal: no upper pairs */
#pragma omp parallel for schedule(static)
    for (long pt = 0; pt < parts * x->T; pt++) {
        int tri = (int)(pt / x->T);
        long t = pt % x->T;
        double cq[2 * LX_SPEC_MAX_PAIRS], ck[2 * LX_SPEC_MAX_PAIRS];
        lx_rotary_angles(cq, &x->spec->rotary, lx_posmap_pos(pm, t, tri == 0) - (double)t);
        lx_rotary_angles(ck, &x->spec->rotary, lx_posmap_pos(pm, t, tri == 1) - (double)t);
        for (int h = 0; h < x->H; h++)
            turn_row(x, x->q + t * x->ld + (long)h * x->D, rot_row(x, 2 * tri, h, t), cq);
        for (int g = 0; g < x->KV; g++)
            turn_row(x, x->k + t * x->ld + (long)g * x->D, rot_row(x, 2 * tri + 1, g, t), ck);
    }
    if (!rot_panels(x, 0, 0))
        return;
#pragma omp parallel for schedule(static)
    for (long pg = 0; pg < parts * x->KV; pg++) {
        int tri = (int)(pg / x->KV), g = (int)(pg % x->KV);
        lx_gemm_pack_bt(rot_panels(x, tri, g), rot_row(x, 2 * tri + 1, g, 0), x->D, x->T, x->D);
    }
}

/* Row t of query head h's rows in part `which` (rot_row; odd parts: its key/value head's). */
static const float *rot_at(const struct tiled *x, int which, int h, long t)
{
    return rot_row(x, which, which % 2 ? h / x->G : h, t);
}

/* On the kernel from the keys' panels when j0 starts one, else through lx_gemm. */
void lx_tiled_far_product(const struct tiled *x, float *S, int part, int h, float c, long i0, long j0, int nr,
                          int nc)
{
    int bk = x->ws->bk, D = x->D;
    const float *panels = rot_panels(x, part, h / x->G);
    if (panels && j0 % LX_GEMM_NR == 0)
        lx_gemm_rows(S, bk, rot_at(x, 2 * part, h, i0), D, panels + (size_t)j0 * D, LX_GEMM_NR, (long)D * LX_GEMM_NR,
                     nr, nc, D, c, 0.0f);
    else
        lx_gemm(S, bk, rot_at(x, 2 * part, h, i0), D, rot_at(x, 2 * part + 1, h, j0), D, nr, nc, D, 0, 1, c, 0.0f);
}
