/*
** harness/engine/data/corpus.c - reading the manifest and the corpus files (see corpus.h).
*/
#define _DEFAULT_SOURCE     /* realpath, readlink */
#include "harness/engine/data/corpus.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/core/hash.h"
#include "harness/engine/tokenizers/tokenizer.h"

#ifndef LX_SOURCE_DIR
#define LX_SOURCE_DIR "."
#endif

/* Is the running executable inside the checkout it was built from? Then
** *exe_dir is its folder either way. */
static int in_build_tree(char *exe_dir, size_t n)
{
    char exe[PATH_MAX], src[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) {
        snprintf(exe_dir, n, ".");
        return 0;
    }
    exe[k] = '\0';
    char *slash = strrchr(exe, '/');
    snprintf(exe_dir, n, "%.*s", slash ? (int)(slash - exe) : 1, slash ? exe : ".");
    if (!realpath(LX_SOURCE_DIR, src))
        return 0;
    size_t m = strlen(src);
    return strncmp(exe, src, m) == 0 && exe[m] == '/';
}

/* $env, else <checkout>/<tree> from the build tree, else <prefix>/share/lenx/<tree>
** (tree's last component); returns how, env_how for the variable. */
static const char *choose_dir(char *out, size_t n, const char *env, const char *env_how, const char *tree)
{
    const char *d = getenv(env);
    if (d && *d) {
        snprintf(out, n, "%s", d);
        return env_how;
    }
    char exe_dir[PATH_MAX];
    if (in_build_tree(exe_dir, sizeof exe_dir)) {
        snprintf(out, n, "%s/%s", LX_SOURCE_DIR, tree);
        return "the build tree";
    }
    const char *last = strrchr(tree, '/');
    snprintf(out, n, "%s/../share/lenx/%s", exe_dir, last ? last + 1 : tree);
    return "the install prefix";
}

const char *lx_data_dir(char *out, size_t n)
{
    return choose_dir(out, n, "LENX_DATA", "LENX_DATA or --data", "data");
}

const char *lx_corpus_split(int corpus)
{
    return corpus == 2 ? "stories" : corpus == 1 ? "ood" : "test";
}

const char *lx_corpus_choice(int corpus)
{
    return corpus == 2 ? "stories" : corpus == 1 ? "sotu" : "austen";
}

const char *lx_corpus_too_short_hint(const char *name)
{
    return strcmp(name, "sotu") == 0 ? "use a shorter length (no State of the Union address is that long)"
                                     : "use a shorter length or the sotu corpus";
}

const char *lx_heldout_dir(char *out, size_t n)
{
    return choose_dir(out, n, "LENX_HELDOUT", "LENX_HELDOUT", "configs/heldout");
}

/* How to get the committed held-out stories back (docs/data.md#held-out-stories). */
#define LX_HELDOUT_HINT "run `make heldout` in the lenx checkout: it checks configs/heldout, the committed text, " \
    "against its manifest and names what differs (`git checkout -- configs/heldout` restores it); " \
    "LENX_HELDOUT, when set, must name a copy of that directory"

static int load_split(struct lx_corpus *c, const char *split, struct lx_error *err)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    int heldout = strcmp(split, "stories") == 0;
    const char *how = heldout ? lx_heldout_dir(dir, sizeof dir) : lx_data_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/manifest.tsv", dir);
    FILE *fp = fopen(path, "r");
    if (!fp && heldout)
        return lx_err(err, LX_EIO, "no held-out stories manifest at %s (%s); the directory came from %s\n"
                      "  hint: " LX_HELDOUT_HINT, path, strerror(errno), how);
    if (!fp)
        return lx_err(err, LX_EIO, "no corpus manifest at %s (%s); the data directory came from %s\n"
                      "  tried: --data DIR / $LENX_DATA (%s), then the checkout's data/ when run from the "
                      "build tree, else <prefix>/share/lenx/data when installed\n"
                      "  hint: run `make data` in the lenx checkout (and `make install` to copy it under the "
                      "prefix), or pass --data DIR naming a data directory",
                      path, strerror(errno), how, getenv("LENX_DATA") && *getenv("LENX_DATA") ? "set" : "unset");
    struct lx_sha256 h;
    lx_sha256_init(&h);
    char line[8192];
    int lineno = 0, rc = LX_OK;
    while (rc == LX_OK && fgets(line, sizeof line, fp)) {
        lineno++;
        if (lineno == 1)
            continue;   /* header */
        char sp[32], rel[4096], want[65];
        long bytes;
        if (sscanf(line, "%31s %4095s %ld %64s", sp, rel, &bytes, want) != 4) {
            rc = lx_err(err, LX_EIO, "%s:%d: malformed manifest line\n  hint: rerun `make data`", path, lineno);
            break;
        }
        if (strcmp(sp, split) != 0)
            continue;
        lx_sha256_update(&h, line, strlen(line));
        struct lx_corpus_doc d = {0};
        char full[8192];
        /* manifest paths start with "data/": resolve them against the data dir */
        const char *tail = strncmp(rel, "data/", 5) == 0 ? rel + 5 : rel;
        snprintf(full, sizeof full, "%s/%s", dir, tail);
        struct lx_error sub;
        if ((rc = lx_read_file(full, &d.bytes, &d.n, 0, &sub)) < 0) {
            lx_err(err, rc, "%s\n  hint: %s", sub.msg, heldout ? LX_HELDOUT_HINT : "run `make data`");
            break;
        }
        char got[65];
        lx_sha256_hex_bytes(d.bytes, (size_t)d.n, got);
        if (strcmp(got, want) != 0 || d.n != bytes) {   /* the held-out text is input, the data a build product */
            free(d.bytes);
            rc = heldout ? lx_err(err, LX_EINVAL, "%s is not the committed held-out text: it does not match its "
                                  "manifest hash (%s:%d)\n  hint: " LX_HELDOUT_HINT, full, path, lineno)
                         : lx_err(err, LX_EIO, "%s does not match its manifest hash (%s:%d)\n  hint: the corpus "
                                  "changed since `make data`; rerun `make data`", full, path, lineno);
            break;
        }
        d.path = lx_xstrdup(rel);
        c->docs = lx_xrealloc(c->docs, sizeof *c->docs * (size_t)(c->n_docs + 1));
        c->docs[c->n_docs++] = d;
        c->n_bytes += d.n;
    }
    fclose(fp);
    if (rc == LX_OK && c->n_docs == 0)
        rc = lx_err(err, LX_EIO, "%s lists no documents of split '%s'\n  hint: rerun `make data`", path, split);
    lx_sha256_final_hex(&h, c->hash);
    c->split = split;
    if (rc == LX_OK && heldout && strcmp(c->hash, LX_HELDOUT_SHA256) != 0)
        rc = lx_err(err, LX_EINVAL, "%s is not the committed held-out stories manifest (its lines hash to %.12s, "
                    "the committed ones to %.12s); the directory came from %s\n  hint: " LX_HELDOUT_HINT,
                    path, c->hash, LX_HELDOUT_SHA256, how);
    return rc;
}

/* The once-only cache (see corpus.h): a split is loaded on first use and
** kept until exit; a failed load leaves nothing behind and is tried again. */
static int cached_split(const struct lx_corpus **out, int i, const char *split, struct lx_error *err)
{
    static struct lx_corpus cache[4];
    static int loaded[4];
    int rc = LX_OK;
#pragma omp critical(lx_corpus_cache)
    {
        if (!loaded[i] && (rc = load_split(&cache[i], split, err)) < 0) {
            for (int k = 0; k < cache[i].n_docs; k++) {
                free(cache[i].docs[k].bytes);
                free(cache[i].docs[k].path);
            }
            free(cache[i].docs);
            memset(&cache[i], 0, sizeof cache[i]);
        } else {
            loaded[i] = 1;
        }
    }
    if (rc == LX_OK)
        *out = &cache[i];
    return rc;
}

/* Where the text of a `data:` file breaks UTF-8: the offset of the first
** byte that begins no well-formed sequence, its line and column (in
** characters, 1-based) in *line, *col; -1 when the text is well-formed. */
static long utf8_break(const unsigned char *s, long n, long *line, long *col)
{
    *line = 1, *col = 1;
    for (long i = 0; i < n; (*col)++) {
        int k = lx_utf8_len(s + i, (size_t)(n - i));
        if (k == 0)
            return i;
        if (s[i] == '\n')
            (*line)++, *col = 0;
        i += k;
    }
    return -1;
}

/* A text file as a corpus of one document, hashed over its bytes. */
static int load_file(struct lx_corpus *c, const char *path, struct lx_error *err)
{
    struct lx_corpus_doc d = {0};
    struct lx_error sub;
    long line, col, bad;
    int rc = lx_read_file(path, &d.bytes, &d.n, 0, &sub);
    if (rc < 0)
        return lx_err(err, rc, "data file: %s (a `data:` path is relative to the sweep file's directory)", sub.msg);
    if (d.n == 0)
        rc = lx_err(err, LX_EINVAL, "data file %s is empty\n  hint: `data:` names a UTF-8 text file to score", path);
    else if ((bad = utf8_break(d.bytes, d.n, &line, &col)) >= 0)
        rc = lx_err(err, LX_EINVAL, "data file %s:%ld:%ld: not UTF-8 (byte 0x%02x at offset %ld begins no "
                    "well-formed sequence)\n  hint: convert the text to UTF-8, e.g. with iconv -t UTF-8", path,
                    line, col, d.bytes[bad], bad);
    if (rc < 0) {
        free(d.bytes);
        return rc;
    }
    d.path = lx_xstrdup(path);
    lx_sha256_hex_bytes(d.bytes, (size_t)d.n, c->hash);
    c->docs = lx_xmalloc(sizeof *c->docs);
    c->docs[0] = d;
    c->n_docs = 1;
    c->n_bytes = d.n;
    return LX_OK;
}

/* The "file:PATH" splits: each file read once and kept until exit, like the
** installed splits; the names handed out by lx_corpus_file_split live as long. */
static struct lx_corpus **files;
static int n_files;

const char *lx_corpus_file_split(const char *path)
{
    const char *name = NULL;
#pragma omp critical(lx_corpus_cache)
    {
        for (int i = 0; i < n_files && !name; i++)
            if (strcmp(files[i]->split + 5, path) == 0)
                name = files[i]->split;
        if (!name) {
            struct lx_corpus *c = lx_xcalloc(1, sizeof *c);
            size_t n = strlen(path) + 6;
            char *s = lx_xmalloc(n);
            snprintf(s, n, "file:%s", path);
            c->split = name = s;
            files = lx_xrealloc(files, sizeof *files * (size_t)(n_files + 1));
            files[n_files++] = c;
        }
    }
    return name;
}

static int cached_file(const struct lx_corpus **out, const char *split, struct lx_error *err)
{
    int rc = LX_EINVAL, found = 0;
#pragma omp critical(lx_corpus_cache)
    for (int i = 0; i < n_files && !found; i++) {
        struct lx_corpus *c = files[i];
        if (strcmp(c->split, split) != 0)
            continue;
        found = 1;
        rc = c->n_docs ? LX_OK : load_file(c, split + 5, err);
        if (rc == LX_OK)
            *out = c;
    }
    if (!found)     /* a name lx_corpus_file_split did not hand out */
        rc = lx_err(err, LX_EINVAL, "no corpus split '%s'", split);
    return rc;
}

int lx_corpus_get(const struct lx_corpus **out, const char *split, struct lx_error *err)
{
    static const char *const splits[] = {"train", "test", "ood", "stories"};
    for (int i = 0; i < 4; i++)
        if (strcmp(split, splits[i]) == 0)
            return cached_split(out, i, splits[i], err);
    if (strncmp(split, "file:", 5) == 0)
        return cached_file(out, split, err);
    return lx_err(err, LX_EINVAL, "no corpus split '%s'; the splits are train, test, ood, stories", split);
}

/* Windows over documents of len[0, n_docs) units (bytes or tokens). */
static long windows(const long *len, int n_docs, long n, long max, struct lx_window *out)
{
    long total = 0;
    for (int d = 0; d < n_docs; d++)
        total += len[d] / n;
    long take = max > 0 && total > max ? max : total;
    if (!out)
        return take;
    /* window k of the take is the floor(k * total / take)-th of the list */
    long k = 0, idx = 0;
    for (int d = 0; d < n_docs && k < take; d++)
        for (long w = 0; w < len[d] / n && k < take; w++, idx++)
            if (idx == k * total / take) {
                out[k].doc = d;
                out[k].off = w * n;
                k++;
            }
    return take;
}

long lx_corpus_windows(const struct lx_corpus *c, long n, long max, struct lx_window *out)
{
    long *len = lx_xmalloc(sizeof *len * (size_t)c->n_docs);
    for (int d = 0; d < c->n_docs; d++)
        len[d] = c->docs[d].n;
    long take = windows(len, c->n_docs, n, max, out);
    free(len);
    return take;
}

long lx_tokens_windows(const struct lx_corpus_tokens *ct, long n, long max, struct lx_window *out)
{
    return windows(ct->n, ct->c->n_docs, n, max, out);
}

/* The token cache: one entry per (split, tokenizer hash), kept until exit. */
#define MAX_ENCODED 16

int lx_corpus_tokens(const struct lx_corpus_tokens **out, const char *split, const struct lx_tokenizer *t,
                     struct lx_error *err)
{
    return lx_corpus_tokens_as(out, split, t, LX_ENC_SEGMENT, err);
}

int lx_corpus_tokens_as(const struct lx_corpus_tokens **out, const char *split, const struct lx_tokenizer *t,
                        unsigned flags, struct lx_error *err)
{
    static struct lx_corpus_tokens cache[MAX_ENCODED];
    static int n_cache;
    const struct lx_corpus *c;
    int rc = lx_corpus_get(&c, split, err);
    if (rc < 0)
        return rc;
    *out = NULL;
#pragma omp critical(lx_corpus_tokens)
    {
        for (int i = 0; i < n_cache && !*out; i++)
            if (cache[i].c == c && strcmp(cache[i].hash, t->hash) == 0 && cache[i].flags == flags)
                *out = &cache[i];
        if (!*out && n_cache < MAX_ENCODED) {
            struct lx_corpus_tokens *ct = &cache[n_cache++];
            *ct = (struct lx_corpus_tokens){.c = c, .flags = flags};
            snprintf(ct->hash, sizeof ct->hash, "%s", t->hash);
            ct->ids = lx_xcalloc((size_t)c->n_docs, sizeof *ct->ids);
            ct->n = lx_xcalloc((size_t)c->n_docs, sizeof *ct->n);
            struct lx_error sub;
            for (int d = 0; d < c->n_docs && rc == LX_OK; d++) {
                struct lx_ids v = {0};
                int got = lx_tokenizer_encode(t, (const char *)c->docs[d].bytes, (size_t)c->docs[d].n, flags, &v,
                                              &sub);
                ct->ids[d] = v.id;
                ct->n[d] = got < 0 ? 0 : v.n;
                ct->n_tokens += ct->n[d];
                if (got < 0)    /* text the tokenizer cannot take: the entry is dropped */
                    rc = lx_err(err, got, "corpus split '%s', document %d: %s", split, d, sub.msg);
            }
            if (rc == LX_OK) {
                *out = ct;
            } else {
                for (int d = 0; d < c->n_docs; d++)
                    free(ct->ids[d]);
                free(ct->ids), free(ct->n);
                n_cache--;
            }
        }
    }
    if (rc < 0)
        return rc;
    if (!*out)
        return lx_err(err, LX_EINVAL, "corpus split '%s': more than %d tokenizers in one process", split,
                      MAX_ENCODED);
    return LX_OK;
}

long lx_window_cap(long windows, long tokens, long L)
{
    if (tokens <= 0)
        return windows;
    return tokens / L > 1 ? tokens / L : 1;
}

int lx_corpus_unigram(double **out, const struct lx_tokenizer *t, struct lx_error *err)
{
    const struct lx_corpus_tokens *train;
    *out = NULL;
    int rc = lx_corpus_tokens(&train, "train", t, err);
    if (rc < 0)
        return rc;
    long K = t->is_byte ? 256 : t->n_vocab;
    double *cnt = lx_xmalloc(sizeof *cnt * (size_t)K);
    for (long i = 0; i < K; i++)
        cnt[i] = 1.0;
    for (int d = 0; d < train->c->n_docs; d++)
        for (long i = 0; i < train->n[d]; i++)
            cnt[train->ids[d][i]] += 1.0;
    double total = (double)train->n_tokens + (double)K;
    for (long i = 0; i < K; i++)
        cnt[i] = -log(cnt[i] / total);
    *out = cnt;
    return LX_OK;
}
