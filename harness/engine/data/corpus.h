/*
** harness/engine/data/corpus.h - the byte-level tokenizer and the installed corpora.
**
** Tokens are bytes (0..255) plus four specials, so any text works and a length
** is exactly a number of bytes (docs/data.md). `make data` (scripts/data.sh)
** writes the corpora and data/manifest.tsv (split, path, bytes, sha256); this
** module reads them back, checks every file against its hash, and gives each
** split a content hash that enters model and run keys.
**
**   split   corpus                                       used for
**   train   Austen: five novels                          training (+ validation tail)
**   test    Austen: Persuasion, held out whole           `austen` in tasks
**   ood     State of the Union addresses, 1790-         `sotu` in tasks
*/
#ifndef LX_CORPUS_H
#define LX_CORPUS_H

#include "harness/core/lx.h"
#include "harness/engine/tokenizers/tok_common.h"

struct lx_corpus_doc {
    char *path;             /* as in the manifest, relative to the data dir's parent */
    unsigned char *bytes;   /* (n,) the document's text: its tokens */
    long n;
};

struct lx_corpus {
    const char *split;              /* "train", "test", "ood", "stories" or "file:PATH" */
    struct lx_corpus_doc *docs;     /* (n_docs,) in manifest order */
    int n_docs;
    long n_bytes;                   /* sum of docs[i].n */
    char hash[65];                  /* SHA-256 over the manifest lines of the split (a file: its bytes) */
};

/* The data directory (docs/data.md#the-data-directory) into out (n bytes):
**   1. $LENX_DATA, which `lenx --data DIR` sets;
**   2. run from the build tree (the executable lies inside the checkout it
**      was built from): the checkout's data/;
**   3. installed: <prefix>/share/lenx/data beside <prefix>/bin/lenx (what
**      `make install` copies).
** Returns which of them it is, for messages ("LENX_DATA or --data", "the
** build tree", "the install prefix"). */
const char *lx_data_dir(char *out, size_t n);

/* A split, loaded once per process and checked against the manifest hashes;
** the returned corpus lives until exit. Errors say which data directory was
** tried, how it was chosen and how to fix it (make data, --data).
**
** The cache is process-wide on purpose: corpora are read-only after loading
** and are reached from task hooks that take no context (a retrieval task's
** generate reads prose), so the cache is a once-only loader rather than an
** object threaded through every caller. Loading is guarded by an OpenMP
** critical section, so concurrent callers load a split once; the data
** directory is read on the first load (set --data before any). */
int lx_corpus_get(const struct lx_corpus **out, const char *split, struct lx_error *err);

/* A text file as a split (a task's `data:`, docs/config.md#text-files-as-data): the name
** "file:PATH" that lx_corpus_get reads as one document, the file's bytes,
** which must be non-empty UTF-8; its hash is the SHA-256 of those bytes, so a
** changed file is another cell. The name lives until exit. */
const char *lx_corpus_file_split(const char *path);

/* A window of a document: tokens [off, off + n). */
struct lx_window {
    int doc;
    long off;
};

/* Non-overlapping windows of n tokens: in each document [0, n), [n, 2n), ...
** (a short tail is dropped). When there are more than max (> 0), max of them
** spread evenly over the list. out (may be NULL) receives them; returns the
** count. Independent of the method, so every method sees the same windows. */
long lx_corpus_windows(const struct lx_corpus *c, long n, long max, struct lx_window *out);

/* A split in a tokenizer's tokens (docs/tasks.md#tokenizers): each document
** encoded on its own, without BOS or EOS, so a window of n tokens is n of the
** model's tokens. Cached per (split, tokenizer hash) for the life of the
** process, like the splits themselves: every cell of a model reuses its
** encoding, and a new tokenizer encodes once (Austen's five novels take about
** a second in SentencePiece). The byte tokenizer's tokens are the bytes. */
struct lx_tokenizer;
struct lx_corpus_tokens {
    const struct lx_corpus *c;      /* the split's text */
    char hash[65];                  /* the tokenizer's hash: the cache key with the split and flags */
    unsigned flags;                 /* how each document was encoded (LX_ENC_*) */
    int **ids;                      /* (n_docs,) each document's tokens */
    long *n;                        /* (n_docs,) how many */
    long n_tokens;                  /* sum of n */
};

int lx_corpus_tokens(const struct lx_corpus_tokens **out, const char *split, const struct lx_tokenizer *t,
                     struct lx_error *err);

/* −log p(token) under the training split's token unigram in t's tokens,
** add-one smoothed over the K text ids (the 256 bytes, or t's whole
** vocabulary): *out (K,), the caller frees it. The no-context baseline of a
** perplexity. */
int lx_corpus_unigram(double **out, const struct lx_tokenizer *t, struct lx_error *err);

/* The same with each document encoded as lx_tokenizer_encode does with
** flags: lx_corpus_tokens is LX_ENC_SEGMENT; 0 encodes each document as a
** whole text, with the dummy prefix its tokenizer puts in front (llama2.c's
** leading space), as a peer's tokenizer reads a file (the ppl protocols). */
int lx_corpus_tokens_as(const struct lx_corpus_tokens **out, const char *split, const struct lx_tokenizer *t,
                        unsigned flags, struct lx_error *err);

/* lx_corpus_windows over the documents' tokens: windows of n tokens. */
long lx_tokens_windows(const struct lx_corpus_tokens *ct, long n, long max, struct lx_window *out);

/* The window cap of a corpus task at length L: `windows` (0 = all), or with
** a token budget (tokens > 0) max(1, tokens / L). */
long lx_window_cap(long windows, long tokens, long L);

/* A task's `corpus` parameter: an enum row over LX_CORPUS_CHOICES, whose
** index lx_corpus_split maps to its split (austen -> test, sotu -> ood,
** stories -> stories). */
#define LX_CORPUS_CHOICES "austen|sotu|stories"
const char *lx_corpus_split(int corpus);
/* Its name in LX_CORPUS_CHOICES ("austen", "sotu", "stories"). */
const char *lx_corpus_choice(int corpus);
/* The hint for a length no document of corpus `name` (a LX_CORPUS_CHOICES
** name; "" for a data file) is long enough for: a shorter length, or sotu's
** longer documents unless name is sotu already. */
const char *lx_corpus_too_short_hint(const char *name);

/* The directory of the held-out stories (split "stories": text sampled once
** from stories260K and committed, docs/data.md#held-out-stories), whose
** manifest.tsv lists them like the data directory's: $LENX_HELDOUT, else the
** checkout's configs/heldout when run from the build tree, else
** <prefix>/share/lenx/heldout. Returns how it was chosen. */
const char *lx_heldout_dir(char *out, size_t n);

/* The committed held-out text: the hash of configs/heldout/manifest.tsv's
** lines after the header (the split hash lx_corpus_get gives "stories").
** Split "stories" is refused (LX_EINVAL) under any other manifest, so cells
** that read it are one experiment on every machine. */
#define LX_HELDOUT_SHA256 "15ee8748dbc873367b8ae227bba3adaed17360bb02c6f7fd53044f9a9a0bb329"

#endif
