/*
** harness/engine/tokenizers/bpe.c - the shared BPE model: vocabulary tables and the merge
** loop (bpe.h, docs/tokenizers.md#bpe).
*/
#include "harness/engine/tokenizers/bpe.h"

#include <stdlib.h>
#include <string.h>

struct lx_bpe_sym {
    int32_t id;         /* current token */
    int32_t prev, next; /* neighbours in the word, -1 at the ends */
    int alive;          /* 0 once merged into its left neighbour */
};

struct lx_bpe_cand {
    double prio;        /* the pair's priority */
    int32_t left;       /* left symbol (its index orders ties: leftmost first) */
    int32_t right;      /* right symbol */
    int32_t a, b;       /* their ids when the candidate was made */
    int32_t id;         /* the merged token */
};

/* Strings hash as a polynomial, h = sum (s[i] + 1) * P^(n-1-i) mod 2^64, so
** that every prefix of a string hashes in O(1) from the one before, and a
** suffix from the whole and its prefix (lx_bpe_splits); hash_key mixes the
** result before it picks a slot. */
#define HASH_P 0x100000001b3ULL

static uint64_t hash_step(uint64_t h, char c)
{
    return h * HASH_P + (unsigned char)c + 1;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = hash_step(h, s[i]);
    return h;
}

static uint64_t hash_key(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    return k ^ (k >> 33);
}

void lx_bpe_init(struct lx_bpe *b, long n_vocab)
{
    memset(b, 0, sizeof *b);
    b->n_vocab = n_vocab;
    b->off = lx_xcalloc((size_t)n_vocab, sizeof *b->off);
    b->len = lx_xcalloc((size_t)n_vocab, sizeof *b->len);
    b->arena = lx_xmalloc(b->cap_arena = 64);   /* never NULL: an id without bytes points here */
    for (int i = 0; i < 256; i++)
        b->byte_id[i] = -1;
    b->unk = -1;
}

void lx_bpe_release(struct lx_bpe *b)
{
    if (!b)
        return;
    free(b->off);
    free(b->len);
    free(b->arena);
    free(b->slot);
    free(b->pair);
    free(b->operand);
    memset(b, 0, sizeof *b);
}

void lx_bpe_set(struct lx_bpe *b, int32_t id, const char *s, size_t n)
{
    LX_ASSERT(id >= 0 && id < b->n_vocab);
    if (b->n_arena + n > b->cap_arena) {
        b->cap_arena = 2 * (b->n_arena + n) + 4096;
        b->arena = lx_xrealloc(b->arena, b->cap_arena);
    }
    memcpy(b->arena + b->n_arena, s, n);
    b->off[id] = (uint32_t)b->n_arena;
    b->len[id] = (uint32_t)n;
    b->n_arena += n;
}

void lx_bpe_index(struct lx_bpe *b)
{
    uint64_t cap = 1024;
    while (cap < 2 * (uint64_t)b->n_vocab)
        cap *= 2;
    free(b->slot);
    b->slot = lx_xmalloc(cap * sizeof *b->slot);
    memset(b->slot, 0xff, cap * sizeof *b->slot);
    b->mask = cap - 1;
    for (int32_t id = b->first_text; id < b->n_vocab; id++) {
        size_t n;
        const char *s = lx_bpe_str(b, id, &n);
        if (lx_bpe_find(b, s, n) >= 0)
            continue;   /* the lower id keeps the string */
        uint64_t h = hash_key(hash_bytes(s, n)) & b->mask;
        while (b->slot[h] >= 0)
            h = (h + 1) & b->mask;
        b->slot[h] = id;
    }
}

/* The id of s[0, n), whose hash_bytes is h, or -1. */
static int32_t find_hashed(const struct lx_bpe *b, const char *s, size_t n, uint64_t h)
{
    for (uint64_t at = hash_key(h) & b->mask;; at = (at + 1) & b->mask) {
        int32_t id = b->slot[at];
        if (id < 0)
            return -1;
        if (b->len[id] == n && memcmp(b->arena + b->off[id], s, n) == 0)
            return id;
    }
}

int32_t lx_bpe_find(const struct lx_bpe *b, const char *s, size_t n)
{
    return find_hashed(b, s, n, hash_bytes(s, n));
}

long lx_bpe_splits(const struct lx_bpe *b, const char *s, size_t n, int32_t *left, int32_t *right)
{
    if (n < 2)
        return 0;
    uint64_t *pre = lx_xmalloc((n + 1) * sizeof *pre);   /* pre[k]: hash of s[0, k) */
    pre[0] = 0;
    for (size_t i = 0; i < n; i++)
        pre[i + 1] = hash_step(pre[i], s[i]);
    long k = 0;
    uint64_t pow = 1;   /* P^(n - cut) */
    for (size_t cut = n - 1; cut >= 1; cut--) {
        pow *= HASH_P;
        int32_t l = find_hashed(b, s, cut, pre[cut]);
        int32_t r = l >= 0 ? find_hashed(b, s + cut, n - cut, pre[n] - pre[cut] * pow) : -1;
        if (r >= 0)
            left[k] = l, right[k++] = r;
    }
    free(pre);
    return k;
}

static struct lx_bpe_pair *pair_slot(struct lx_bpe_pair *tab, uint64_t mask, uint64_t key)
{
    uint64_t h = hash_key(key) & mask;
    while (tab[h].key && tab[h].key != key)
        h = (h + 1) & mask;
    return &tab[h];
}

void lx_bpe_add_pair(struct lx_bpe *b, int32_t left, int32_t right, double prio, int32_t id, int last)
{
    if (2 * (uint64_t)(b->n_pairs + 1) > b->pair_mask) {   /* grow: keep the load under 1/2 */
        uint64_t cap = b->pair_mask ? 2 * (b->pair_mask + 1) : 4096;
        struct lx_bpe_pair *tab = lx_xcalloc(cap, sizeof *tab);
        for (uint64_t i = 0; b->pair && i <= b->pair_mask; i++)
            if (b->pair[i].key)
                *pair_slot(tab, cap - 1, b->pair[i].key) = b->pair[i];
        free(b->pair);
        b->pair = tab;
        b->pair_mask = cap - 1;
    }
    if (!b->operand)
        b->operand = lx_xcalloc((size_t)b->n_vocab, 1);
    b->operand[left] = b->operand[right] = 1;
    uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    struct lx_bpe_pair *p = pair_slot(b->pair, b->pair_mask, key);
    if (!p->key) {
        b->n_pairs++;
        *p = (struct lx_bpe_pair){key, prio, id};
    } else if (last || prio < p->prio) {
        p->prio = prio;
        p->id = id;
    }
}

void lx_bpe_add_score_merges(struct lx_bpe *b, const float *score)
{
    size_t max_len = 1;
    for (int32_t id = b->first_text; id < b->n_vocab; id++)
        max_len = b->len[id] > max_len ? b->len[id] : max_len;
    int32_t *left = lx_xmalloc(max_len * sizeof *left), *right = lx_xmalloc(max_len * sizeof *right);
    for (int32_t id = b->first_text; id < b->n_vocab; id++) {
        size_t len;
        const char *s = lx_bpe_str(b, id, &len);
        long n_cuts = lx_bpe_find(b, s, len) == id ? lx_bpe_splits(b, s, len, left, right) : 0;
        for (long c = 0; c < n_cuts; c++)
            lx_bpe_add_pair(b, left[c], right[c], -(double)score[id], id, 0);
    }
    free(left);
    free(right);
}

const struct lx_bpe_pair *lx_bpe_pair_find(const struct lx_bpe *b, int32_t left, int32_t right)
{
    if (!b->pair)
        return NULL;
    const struct lx_bpe_pair *p =
        pair_slot(b->pair, b->pair_mask, ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1);
    return p->key ? p : NULL;
}

/* ---- the heap of candidate merges: lowest (prio, left) on top ---- */

static int cand_less(const struct lx_bpe_cand *x, const struct lx_bpe_cand *y)
{
    return x->prio < y->prio || (x->prio == y->prio && x->left < y->left);
}

static void heap_push(struct lx_bpe_work *w, struct lx_bpe_cand c)
{
    if (w->n_heap == w->cap_heap) {
        w->cap_heap = w->cap_heap ? 2 * w->cap_heap : 64;
        w->heap = lx_xrealloc(w->heap, (size_t)w->cap_heap * sizeof *w->heap);
    }
    long i = w->n_heap++;
    while (i > 0 && cand_less(&c, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = c;
}

static struct lx_bpe_cand heap_pop(struct lx_bpe_work *w)
{
    struct lx_bpe_cand top = w->heap[0], last = w->heap[--w->n_heap];
    long i = 0, n = w->n_heap;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && cand_less(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!cand_less(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n > 0)
        w->heap[i] = last;
    return top;
}

/* A candidate for the pair (left, left's next), when the pair merges. */
static void consider(const struct lx_bpe *b, struct lx_bpe_work *w, int32_t left)
{
    if (left < 0 || w->sym[left].next < 0)
        return;
    int32_t right = w->sym[left].next;
    const struct lx_bpe_pair *p = lx_bpe_pair_find(b, w->sym[left].id, w->sym[right].id);
    if (p)
        heap_push(w, (struct lx_bpe_cand){p->prio, left, right, w->sym[left].id, w->sym[right].id, p->id});
}

/* ---- the word ---- */

static void merge_run(const struct lx_bpe *b, struct lx_bpe_work *work, long start, long end);

/* Cut w into initial symbols: single bytes (byte-level), or a lead byte with up
** to three continuation bytes looked up whole, falling back to byte tokens or
** the unknown token. Returns the symbol count. */
static long initial_symbols(const struct lx_bpe *b, int32_t lead, const char *w, size_t n, struct lx_bpe_work *work)
{
    if ((long)n + 1 > work->cap_sym) {
        work->cap_sym = (long)n + 64;
        work->sym = lx_xrealloc(work->sym, (size_t)work->cap_sym * sizeof *work->sym);
    }
    long k = 0;
    if (lead >= 0)
        work->sym[k++] = (struct lx_bpe_sym){lead, -1, -1, 1};
    for (size_t i = 0; i < n;) {
        size_t len = 1;
        while (!b->by_bytes && len < 4 && i + len < n && ((unsigned char)w[i + len] & 0xc0) == 0x80)
            len++;
        int32_t id = lx_bpe_find(b, w + i, len);
        for (size_t j = 0; j < len; j++) {
            int32_t one = id >= 0 ? id : b->byte_id[(unsigned char)w[i + j]];
            if (one < 0)
                one = b->unk;
            int fuse = one == b->unk && b->fuse_unk && k > 0 && work->sym[k - 1].id == b->unk;
            if (one >= 0 && !fuse) {
                work->sym[k] = (struct lx_bpe_sym){one, (int32_t)k - 1, -1, 1};
                k++;
            }
            if (id >= 0 || (one == b->unk && b->byte_id[(unsigned char)w[i + j]] < 0))
                break;   /* one symbol for the whole character */
        }
        i += len;
    }
    for (long i = 0; i + 1 < k; i++)
        work->sym[i].next = (int32_t)i + 1;
    return k;
}

void lx_bpe_word(const struct lx_bpe *b, int32_t lead, const char *w, size_t n, struct lx_ids *out,
                 struct lx_bpe_work *work)
{
    if (n == 0)
        return;
    if (b->ignore_merges && lead < 0) {
        int32_t id = lx_bpe_find(b, w, n);
        if (id >= 0) {
            lx_ids_push(out, id);
            return;
        }
    }
    long k = initial_symbols(b, lead, w, n, work);
    for (long start = 0, end; start < k; start = end) {
        end = start + 1;
        if (b->operand && b->operand[work->sym[start].id])
            while (end < k && b->operand[work->sym[end].id])
                end++;
        work->sym[start].prev = -1;
        work->sym[end - 1].next = -1;
        merge_run(b, work, start, end);
    }
    for (long i = 0; i < k; i++)
        if (work->sym[i].alive)
            lx_ids_push(out, work->sym[i].id);
}

/* Merge the symbols [start, end) of a word until no pair merges. */
static void merge_run(const struct lx_bpe *b, struct lx_bpe_work *work, long start, long end)
{
    work->n_heap = 0;
    for (long i = start; i + 1 < end; i++)
        consider(b, work, (int32_t)i);
    while (work->n_heap > 0) {
        struct lx_bpe_cand c = heap_pop(work);
        struct lx_bpe_sym *L = &work->sym[c.left], *R = &work->sym[c.right];
        if (!L->alive || !R->alive || L->next != c.right || L->id != c.a || R->id != c.b)
            continue;   /* stale: one side merged since */
        L->id = c.id;
        L->next = R->next;
        if (R->next >= 0)
            work->sym[R->next].prev = c.left;
        R->alive = 0;
        consider(b, work, L->prev);
        consider(b, work, c.left);
    }
}

void lx_bpe_work_free(struct lx_bpe_work *work)
{
    free(work->sym);
    free(work->heap);
    memset(work, 0, sizeof *work);
}
