/*
** tasks/peer.h - a peer benchmark's own test cases, read from its files
** (`data: PATH` on a task with a protocol preset, tasks/protocols.h): the
** prompt exactly as the peer feeds it to its tokenizer, and its gold(s).
** Each preset names the reader of one line of its peer's JSON Lines file
** (docs/tasks.md#protocol-presets).
*/
#ifndef LX_PEER_H
#define LX_PEER_H

#include <stdint.h>

#include "harness/core/json.h"
#include "harness/core/lx.h"

/* One test case. */
struct lx_peer_case {
    struct lx_buf prompt;   /* the text fed to the tokenizer, byte for byte */
    struct lx_buf golds;    /* the golds, each followed by its NUL, n_golds of them */
    long n_golds;
    long peer_length;       /* the length the peer's file states (LongChat's token_size), -1 when none */
    double depth;           /* where a maker put the needle, 0 (start) … 1 (end); NaN when none */
};

/* A file's test cases, in file order. */
struct lx_peer_set {
    struct lx_peer_case *cases;     /* (n,) */
    long n;
};

/* Reads one line (row, an object of doc) of a peer's file into out. */
typedef int (*lx_peer_reader)(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                              struct lx_error *err);

/* Makes test case `sample` of a cell of `length` from the peer's own template
** and draws (Philox on key, the sample as counter); tk counts the length
** where the peer counts it in the model's tokens. data is the preset's `data:`
** path for a maker that reads one (kamradt's haystack directory), else "".
** For a preset with a fit (lx_peer_fit), length is what the fit made of the
** cell's length. */
struct lx_tokenizer;
typedef int (*lx_peer_maker)(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                             struct lx_peer_case *out, struct lx_error *err);

/* A maker's declaration (and, followed by a body, its definition). */
#define LX_PEER_MAKER(fn)                                                                                          \
    int fn(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,               \
           struct lx_peer_case *out, struct lx_error *err)

/* Builds the prompt of n haystack units (lines, words, documents) into b from
** a maker's ctx. */
typedef void (*lx_peer_build)(void *ctx, long n, struct lx_buf *b);

/* *best = the most units n in [0, most] whose prompt's tokens of tk (BOS not
** counted, as RULER's text_to_tokens) + budget stay within length, by
** bisection (RULER's binary search, run for each case); n below least is not
** built and counts as fitting. *best < least when none fits (the caller says
** why); < 0 with err when tk refuses the text. The probes are built in a
** buffer of its own (the first is some length / 2 units long): the caller
** builds the prompt it keeps. */
int lx_peer_fit_units(lx_peer_build build, void *ctx, long least, long most, long length, long budget,
                      const struct lx_tokenizer *tk, long *best, struct lx_error *err);

/* Fisher-Yates of v[0, n) on r, one draw a step from the last (Python's
** random.shuffle's order, on Philox's draws). */
struct lx_rng;
void lx_peer_shuffle(struct lx_rng *r, long *v, long n);

/* What a cell's length is to a maker that counts it another way (YaRN: the
** filler characters that keep the prompt under `length` tokens of tk), found
** once per cell from the cell's key; < 0 with err when none fits. */
typedef long (*lx_peer_fit)(long length, uint64_t key, const struct lx_tokenizer *tk, struct lx_error *err);

/* Checks a cell's length before any case is made, for a maker that turns it
** into its peer's units by arithmetic alone (no tokenizer), so that a sweep
** file's length no case can have is refused at plan time. */
typedef int (*lx_peer_check)(long length, struct lx_error *err);

/* Reads the data a maker reads from `data:` (a directory, a file) to check
** it before a run, into lx_peer_memo, where the cell's cases find it; errors
** name the path with a hint. */
typedef int (*lx_peer_hay)(const char *path, struct lx_error *err);

/* What a maker reads from a data file (a parsed set, a text), made once a
** process by load and kept while path is unchanged (tasks/peer_memo.c: the
** same device, inode, size and times; a directory's entries as well): the
** next call with the same load and path returns the same value, read-only,
** valid until the next call. A few are kept, the least recently asked
** released first (release frees one); an error from load is not kept. Not
** for threads: a cell's cases are made on the thread that runs the sweep. */
typedef int (*lx_peer_memo_load)(const char *path, void **out, struct lx_error *err);
int lx_peer_memo(const char *path, lx_peer_memo_load load, void (*release)(void *), const void **out,
                 struct lx_error *err);
void lx_peer_memo_clear(void);      /* releases every kept value */

/* Every line of the JSON Lines file at path (plain, or gzip: a `.jsonl.gz`)
** through read; errors name path:line. LX_EIO when the file cannot be read,
** LX_EINVAL when a line is not what read expects or the file holds no case. */
int lx_peer_load(lx_peer_reader read, const char *path, struct lx_peer_set *out, struct lx_error *err);
void lx_peer_release(struct lx_peer_set *s);      /* accepts an empty set */

/* The i-th gold of c (i < c->n_golds). */
const char *lx_peer_gold(const struct lx_peer_case *c, long i);

/* The readers, one per peer format. */
int lx_peer_longchat_lines(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                           struct lx_error *err);   /* prompt, expected_number, token_size */
int lx_peer_longchat_topics(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                            struct lx_error *err);  /* prompt, topics (the gold first) */
/* The same readers on LongChat's path for its base model: the line prompt with
** "Line <{random_idx[0]}>: <REGISTER_CONTENT> is" appended, the topic prompt
** with "\n ASSISTANT: The first topic is" (completion style, sampled there). */
int lx_peer_longchat_lines_base(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                                struct lx_error *err);
int lx_peer_longchat_topics_base(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                                 struct lx_error *err);
/* Appends the gold s[0, n) to c's golds. */
void lx_peer_add_gold(struct lx_peer_case *c, const char *s, size_t n);

/* The pass-key makers (tasks/peer_passkey.c), all landmark attention's
** generate_prompt: the task description, the first p characters of the
** repeated filler, the pass-key line, the first n - p characters of the filler
** again, the question, joined by newlines. They differ in n and the draws:
** landmark-attention llama/run_test.py: n = length, p uniform in [0, n], the
** key in [1, 50000]. */
int lx_peer_landmark(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk, struct lx_peer_case *out,
                     struct lx_error *err);
int lx_peer_landmark_check(long length, struct lx_error *err);     /* n in [0, the filler's characters] */
/* YaRN eval/passkey.py: n = the multiple of 128 before the first whose
** prompt (one draw of the cell) reaches `length` tokens of tk (BOS counted),
** found by lx_peer_yarn_fit (the preset's fit: once a cell); lx_peer_yarn
** takes that n as its length, p uniform in [0, n], the key in [1, 50000]. */
long lx_peer_yarn_fit(long length, uint64_t key, const struct lx_tokenizer *tk, struct lx_error *err);
int lx_peer_yarn(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                 struct lx_peer_case *out, struct lx_error *err);
/* LongLoRA passkey_retrivial.py: n = int(3.75 * length // 1024 * 1024), p
** uniform in [0, n - 1], the key in [1, 49999] (numpy's randint excludes its
** upper bound). */
int lx_peer_longlora(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                     struct lx_peer_case *out, struct lx_error *err);
int lx_peer_longlora_check(long length, struct lx_error *err);     /* n in [1, the filler's characters] */
/* RULER scripts/data/synthetic/niah.py (tasks/peer_ruler.c), niah_single_1
** (scripts/synthetic.yaml): noise haystack (landmark's filler sentence, one a
** line), one needle "One of the special magic numbers for KEY is: VALUE." at
** a uniform line, KEY an adjective-noun word, VALUE 7 digits; the
** single-needle template with its answer prefix; as many haystack lines as
** keep tk's tokens of the text (BOS not counted, as RULER's text_to_tokens) +
** 128 within length. */
int lx_peer_ruler_niah(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                       struct lx_peer_case *out, struct lx_error *err);
/* niah_single_2 and _3: the essay haystack read from data
** (lx_peer_ruler_essays), as many words as fit, the needle between
** sentences at one of 40 depths; VALUE 7 digits (_2) or a version-4 UUID (_3). */
int lx_peer_ruler_niah_single_2(const char *data, long length, uint64_t key, long sample,
                                const struct lx_tokenizer *tk, struct lx_peer_case *out, struct lx_error *err);
int lx_peer_ruler_niah_single_3(const char *data, long length, uint64_t key, long sample,
                                const struct lx_tokenizer *tk, struct lx_peer_case *out, struct lx_error *err);
/* RULER's other niah tasks (scripts/synthetic.yaml), the same needles and
** template (plural when several values are asked: niah.py's): multikey_1 the
** essay haystack with four keys' needles, one key asked; multikey_2 and _3 a
** haystack of other keys' needles, a line each (words and numbers; UUIDs for
** both), one asked; multivalue one key with four values in the essays, all
** asked; multiquery four keys in the essays, all asked ("a, b, c, and d").
** Golds: the values asked, in the question's order (ruler_all: each counts). */
LX_PEER_MAKER(lx_peer_ruler_niah_multikey_1);
LX_PEER_MAKER(lx_peer_ruler_niah_multikey_2);
LX_PEER_MAKER(lx_peer_ruler_niah_multikey_3);
LX_PEER_MAKER(lx_peer_ruler_niah_multivalue);
LX_PEER_MAKER(lx_peer_ruler_niah_multiquery);
/* RULER's variable tracking (vt, scripts/data/synthetic/variable_tracking.py
** with synthetic.yaml's row: one chain of 4 hops in the noise haystack): its
** in-context example (a chain of 3-letter variables in as many noise lines as
** keep the example's prompt within 500 tokens of tk, then its answer), then
** "VAR A = 12345", "VAR B = VAR A ", ... before distinct noise lines, the
** question for the value; as many lines as keep the tokens + 30 within
** length. Golds: the chain's five variables. */
LX_PEER_MAKER(lx_peer_ruler_vt);
/* RULER's frequent words extraction (fwe, freq_words_extraction.py, alpha 2):
** (L - 50) / 50 coded words of six random letters, the first made "...";
** word k (1-based) int(n k^-2 / zeta(2)) times, shuffled, as many words n as
** keep the tokens + 50 within length. Golds: words 2 to 4, the three most
** frequent after the dots. */
LX_PEER_MAKER(lx_peer_ruler_fwe);
/* RULER's common words extraction (cwe, common_words_extraction.py with
** synthetic.yaml's row): words sampled from data's word list (one a line),
** ten of them 30 times each and the rest 3 times (6 and 1 below L = 4,096),
** shuffled and numbered "1. w 2. w ...", after one example of 40 words (20)
** with its answer; as many words as keep the tokens + 120 within length.
** Golds: the ten common words. lx_peer_ruler_words checks the list (lx_peer_hay). */
LX_PEER_MAKER(lx_peer_ruler_cwe);
int lx_peer_ruler_words(const char *path, struct lx_error *err);
/* RULER's QA tasks (qa.py; synthetic.yaml's qa_1 on SQuAD, qa_2 on HotpotQA):
** case i is the file's i-th answerable question, its gold paragraphs among as
** many others as keep the tokens + 32 within length ("Document k:\n..."
** joined by blank lines, shuffled), in qa.py's template. Golds: its answers
** (string_match_part). lx_peer_ruler_squad and lx_peer_ruler_hotpotqa check
** the data file before a run (lx_peer_hay). */
LX_PEER_MAKER(lx_peer_ruler_qa_squad);
LX_PEER_MAKER(lx_peer_ruler_qa_hotpotqa);
int lx_peer_ruler_squad(const char *path, struct lx_error *err);
int lx_peer_ruler_hotpotqa(const char *path, struct lx_error *err);
/* Checks RULER's essays (lx_peer_hay): path is RULER's PaulGrahamEssays.json
** (its "text") or a directory of .txt files (lx_peer_haystack); errors carry
** a hint. */
int lx_peer_ruler_essays(const char *path, struct lx_error *err);
/* The sentences of s[0, n) (words separated by spaces, no other white space),
** Punkt's rule without its trained model (tasks/peer_ruler.c): span[k] =
** {start, end} of sentence k, span holding n / 2 + 1; returns their count. */
long lx_peer_sentences(const char *s, long n, long (*span)[2]);
/* The .txt files of the directory dir, in sorted name order, concatenated
** into out (Kamradt's haystack_dir); LX_EIO when dir cannot be read,
** LX_EINVAL naming the file when one is not UTF-8, or when there is no
** .txt file or all are empty. */
int lx_peer_haystack(const char *dir, struct lx_buf *out, struct lx_error *err);
int lx_peer_kamradt_haystack(const char *dir, struct lx_error *err);   /* lx_peer_hay of the above */
/* LLMTest_NeedleInAHaystack (llm_needle_haystack_tester.py, the Anthropic
** provider's prompt): data's haystack repeated and cut to `length` tokens of
** tk, then to length - 200 - the needle's tokens; the needle (run.py's San
** Francisco sentence) at depth round(100 sample / 34) percent, moved back to
** just after a '.' token (at the end for 100); the context in the provider's
** template with run.py's question. Gold: the needle's key phrase. */
int lx_peer_kamradt(const char *data, long length, uint64_t key, long sample, const struct lx_tokenizer *tk,
                    struct lx_peer_case *out, struct lx_error *err);
int lx_peer_litm(const struct lx_json *doc, const struct lx_jv *row, struct lx_peer_case *out,
                 struct lx_error *err);     /* question, answers, ctxs: lost in the middle's qa.prompt */

#endif
