/*
** harness/spec.h - the attention spec: what a method stack compiles into.
**
** Methods never run attention; they edit this declarative description, and the
** kernels (the gaussian task today, the engine's attention later) read it
** (DESIGN.md §4.1). Today the spec says how logits are transformed:
**
**     logit(head, n, t) = op_k( ... op_2( op_1( S ) ) )
**
** where S is the base logit of the key t positions back from the query
** (t = 0 is the query itself), n is the number of keys the query sees, and each
** op is either a per-row scale (x -> r(n)·x: InfoScale, LogN, ...) or a
** per-distance affine map (x -> a_t·x + m_t: scale-invariant attention, ALiBi).
** Ops apply in stack order, so "[scaleinv, infoscale]" means κ(n)·(a_t·S + m_t).
** Every composition of these maps is again affine in S per (n, t), which is what
** lx_spec_row() tabulates for the fast paths; lx_spec_logit() is the naive
** reference that applies the ops one by one.
**
** The spec also says how positions enter q and k: a rotary table (RoPE's
** inverse frequencies and pair layout) or none, and which method claimed the
** position scheme, so that two schemes in one stack are refused.
**
** Extension point: position maps, logit geometry and visibility join as
** further fields when their methods arrive (issue 4).
*/
#ifndef LX_SPEC_H
#define LX_SPEC_H

#include "harness/lx.h"

/* What the place a method runs in offers (task or model). */
enum {
    LX_CAP_LOGITS = 1 << 0,     /* pre-softmax logits exist (always) */
    LX_CAP_ROTARY = 1 << 1,     /* q/k carry rotary positions */
    LX_CAP_MODEL = 1 << 2,      /* a trained model runs (q, k, v exist) */
};

/* Facts about the model (or, with no model, the task) a method may read.
** They are never method parameters. */
struct lx_facts {
    int d_head;         /* head dimension d */
    long train_len;     /* training context length L */
    int n_heads;        /* attention heads (1 for synthetic logits) */
    long length;        /* evaluation length of the cell */
    unsigned caps;      /* LX_CAP_* offered */
};

enum lx_op_kind {
    LX_OP_ROW_SCALE,    /* x -> r(n)·x */
    LX_OP_DIST_AFFINE,  /* x -> a(head, t)·x + m(head, t) */
};

struct lx_logit_op {
    enum lx_op_kind kind;       /* which of the two shapes */
    const char *method;         /* name of the method that pushed it, for messages */
    const void *params;         /* that method's resolved params; outlives the spec */
    /* ROW_SCALE: the factor for a query that sees n >= 1 keys */
    double (*row_scale)(const void *params, const struct lx_facts *f, long n);
    /* DIST_AFFINE: slope *a and offset *m for distance t >= 0 in head `head` */
    void (*dist_affine)(const void *params, const struct lx_facts *f, int head, long t,
                        double *a, double *m);
};

#define LX_SPEC_MAX_OPS 8
#define LX_SPEC_MAX_PAIRS 256

/* Which two channels of a head form rotary pair k (methods.md §1). */
enum lx_rope_layout {
    LX_ROPE_HALF,           /* (x[k], x[k + d/2]): GPT-NeoX, Hugging Face */
    LX_ROPE_INTERLEAVED,    /* (x[2k], x[2k + 1]): RoFormer, GPT-J, Meta LLaMA */
};

/* Rotary positions: pair k of the vector at position p turns by p·inv_freq[k]. */
struct lx_rotary {
    int n_pairs;                            /* pairs rotated; 0 = no rotary */
    enum lx_rope_layout layout;             /* channel pairing */
    double inv_freq[LX_SPEC_MAX_PAIRS];     /* (n_pairs,) θ_k */
};

struct lx_spec {
    struct lx_facts facts;                  /* copied in at init */
    int n_ops;                              /* ops used */
    struct lx_logit_op ops[LX_SPEC_MAX_OPS];/* (n_ops,) in stack order */
    const char *positions;                  /* method that set the position scheme, or NULL */
    struct lx_rotary rotary;                /* rotary table (n_pairs 0 when none) */
};

void lx_spec_init(struct lx_spec *spec, const struct lx_facts *facts);

/* Append an op; fails when the stack is longer than LX_SPEC_MAX_OPS. */
int lx_spec_push(struct lx_spec *spec, const struct lx_logit_op *op, struct lx_error *err);

/* Claim the position scheme for `method`; fails, naming both, when another
** method of the stack already did (e.g. rope + nope). */
int lx_spec_claim_positions(struct lx_spec *spec, const char *method, struct lx_error *err);

/* Naive reference: the final logit for base logit s. */
double lx_spec_logit(const struct lx_spec *spec, int head, long n, long t, double s);

/* Fast path: for t in [t0, t0 + n_t), logit = A[t - t0]·S + B[t - t0].
** A and B are (n_t,). */
void lx_spec_row(const struct lx_spec *spec, int head, long n, long t0, long n_t,
                 double *A, double *B);

#endif
