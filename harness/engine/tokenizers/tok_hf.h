/*
** harness/engine/tokenizers/tok_hf.h - a Hugging Face tokenizer.json, as the tables its
** pipeline runs on (docs/tokenizers.md#tokenizerjson). tok_hf.c reads the file
** into them; tok_hf_run.c encodes and decodes with them.
**
**   text -> split out added tokens -> normalizer -> pre-tokenizer -> BPE per piece
**   ids  -> tokens -> decoder (Replace, ByteFallback, Fuse, Strip; ByteLevel)
*/
#ifndef LX_TOK_HF_H
#define LX_TOK_HF_H

#include "harness/engine/tokenizers/bpe.h"
#include "harness/engine/tokenizers/regex.h"
#include "harness/engine/tokenizers/unicode.h"

/* Limits on what a file may ask of encoding (docs/tokenizers.md#limits): at
** most HF_MAX_STEPS normalizer and as many pre-tokenizer steps (the families
** lenx reads have at most 4; each step is a level of recursion when
** encoding), and the normalized text, and the pieces the pre-tokenizer hands
** to BPE, at most HF_GROWTH times the text plus HF_GROWTH_SLACK bytes each.
** A Unicode normalizer grows UTF-8 at most 11x (U+FDFA under NFKC/NFKD), a
** SentencePiece Replace " " -> "\u2581" 3x, ByteLevel's prefix space one byte
** per piece: a real file stays far below 16x, a Replace "a" -> "aa" chained 30
** times (2^30) does not. */
#define HF_MAX_STEPS 256
#define HF_GROWTH 16
#define HF_GROWTH_SLACK 1024

/* An added token's first two bytes as a key: 257 c0 + c1, c1 = 256 for a
** one-byte token (the last of c0's keys, so longer tokens come first). */
#define HF_PAIR(c0, c1) (257 * (int)(c0) + (int)(c1))
#define HF_PAIRS (256 * 257)

struct hf_added {
    int32_t id;             /* its id */
    char *s;                /* (n,) its content */
    size_t n;
    int special;            /* a special token (<s>, <|im_end|>) */
    int lstrip, rstrip;     /* the match swallows whitespace on its left / right */
    int single_word;        /* matches only between non-word characters */
};

enum hf_norm_kind { HF_PREPEND, HF_REPLACE, HF_UNICODE };

struct hf_norm {
    enum hf_norm_kind kind;         /* what the step does */
    char *a, *b;                    /* PREPEND: a; REPLACE: a -> b */
    size_t na, nb;
    enum lx_unicode_form form;      /* UNICODE: the normalization form */
    char *where;                    /* its JSON path and type, for messages: "normalizer.normalizers[1] (Replace)" */
};

enum hf_behavior { HF_ISOLATED, HF_REMOVED, HF_MERGED_PREVIOUS };   /* a Split's: the match alone, dropped, or ending the piece before it */

struct hf_split {
    struct lx_regex *re;            /* what splits; NULL: nothing (a ByteLevel without its regex) */
    enum hf_behavior behavior;      /* ISOLATED keeps matches and gaps as pieces, REMOVED drops matches */
    int prefix_space;               /* ByteLevel add_prefix_space: each piece gets a leading ' ' */
    char *pattern;                  /* re's regular expression as written (n_pattern bytes); NULL for a literal */
    size_t n_pattern;
    char *where;                    /* its JSON path and type, for messages */
};

struct hf_replace {
    char *a, *b;                    /* decoder Replace: a -> b in each token */
    size_t na, nb;
};

struct hf_tok {
    struct lx_bpe bpe;              /* the model: vocabulary (raw bytes for byte-level) and merges */
    int bytelevel;                  /* byte-level BPE (tokens are bytes through GPT-2's byte map) */
    struct hf_added *added;         /* (n_added,) added tokens by their first two bytes (HF_PAIR), then longest
                                    ** first */
    int n_added;
    int *bucket;                    /* (HF_PAIRS + 1,) the added tokens of pair key p: added[bucket[p] ..
                                    ** bucket[p + 1]) */
    struct hf_norm *norm;           /* (n_norm,) normalizer steps in order */
    int n_norm;
    struct hf_split *split;         /* (n_split,) pre-tokenizer steps in order */
    int n_split;
    struct hf_replace *repl;        /* (n_repl,) decoder Replace steps */
    int n_repl;
    int dec_bytes;                  /* decoder ByteFallback: <0xXX> tokens become bytes */
    int strip_start, strip_stop;    /* decoder Strip: characters removed from the ends */
    char strip_char;                /* ... when they are this one */
    char **text;                    /* (n_vocab,) added tokens' content by id, NULL for model tokens */
    char **piece;                   /* (n_vocab,) each id's text inside a text (lx_hf_tok_piece); NULL: none */
    size_t *piece_len;              /* (n_vocab,) its bytes */
};

/* Declare the merge a + b (token strings as the file writes them: GPT-2's
** alphabet for byte-level) at priority prio: LX_OK, or which string is not a
** token (enum hf_miss). What model.merges (last: a merge listed twice takes its later rank, as
** Hugging Face's tokenizers do) and a GGUF's merges (the first, as llama.cpp) are read with. */
enum hf_miss { HF_MISS_LEFT = 1, HF_MISS_RIGHT, HF_MISS_MERGED };
int lx_hf_tok_merge(struct hf_tok *hf, const char *a, size_t na, const char *b, size_t nb, double prio, int last);

/* Fill t from the tokenizer.json text[0, n) (t->path names it in messages);
** config: also read BOS/EOS from a tokenizer_config.json beside t->path. */
int lx_hf_tok_open_json(struct lx_tokenizer *t, const char *text, size_t n, int config, struct lx_error *err);

int lx_hf_tok_encode(const struct lx_tokenizer *t, const char *text, size_t n, unsigned flags, struct lx_ids *out,
              struct lx_error *err);
void lx_hf_tok_decode(const struct lx_tokenizer *t, const int32_t *ids, long n, struct lx_buf *out);
/* Fill piece/piece_len once the file is read: the decoder's Replace and
** ByteFallback applied to one id, no Strip; special added tokens have none. */
void lx_hf_tok_pieces_build(struct hf_tok *hf);
const char *lx_hf_tok_piece(const struct lx_tokenizer *t, int32_t id, size_t *len);
/* The to_gguf op (tok_hf_gguf.c). */
int lx_hf_tok_to_gguf(const struct lx_tokenizer *t, struct lx_gguf_out *o, struct lx_error *err);

#endif
