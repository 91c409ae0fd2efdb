/*
** tasks/protocols.h - protocol presets: for a retrieval task, how a peer
** benchmark's own code runs it (its scorer, its answer budget and stop rule,
** how it counts the length, the names of its fields), one row each by
** (task, name). `protocol: lenx`, today's behaviour, is every task's default
** and has no row (docs/tasks.md#protocol-presets).
**
** To add a preset: one row in the table in protocols.c.
*/
#ifndef LX_PROTOCOLS_H
#define LX_PROTOCOLS_H

#include "harness/core/lx.h"
#include "tasks/peer.h"

/* How a preset counts the cell's length L. */
enum lx_length_rule {
    LX_LEN_WINDOW,      /* lenx: the whole window, answer included, is L */
    LX_LEN_PROMPT,      /* the prompt is L tokens and the budget comes on top */
    LX_LEN_WITHIN,      /* RULER: prompt + budget <= L */
    LX_LEN_MEASURED,    /* the peer's data fix the prompt; L is nominal (the length the
                        ** methods are compiled for) and the prompt's tokens are measured */
    LX_LEN_UNDER,       /* YaRN: the most filler, in steps of 128 characters, that keeps the
                        ** prompt under L tokens; the budget comes on top */
    LX_LEN_RATIO,       /* LongLoRA: L tokens make int(3.75 L // 1024 * 1024) filler characters;
                        ** the prompt's tokens are measured */
};

struct lx_protocol {
    const char *task;           /* the task it is for */
    const char *name;           /* the name in `protocol:` */
    const char *follows;        /* the peer's file it follows, one line */
    const char *scorer;         /* the named scorer (tasks/scorers.h) */
    const char *gold_field;     /* the peer's name for the gold in its prediction files, or NULL */
    const char *output_field;   /* the peer's name for the model's output, or NULL */
    lx_peer_reader read;        /* the reader of the peer's data file (`data:`), or NULL */
    lx_peer_maker make;         /* or the maker of its test cases from its own template, or NULL
                                ** (neither: the preset serves `lenx grade` only) */
    lx_peer_fit fit;            /* with make: what the cell's length is to the maker, found once per cell
                                ** (YaRN's filler characters), or NULL: the maker gets the length */
    lx_peer_check check;        /* with make: the check of the cell's length at plan time, or NULL */
    lx_peer_hay haystack;       /* with make: the check of what it reads from `data:`, or NULL */
    const char *data_hint;      /* with haystack: where the haystack comes from, for the hint of an error */
    long samples;               /* with make: the test cases of a cell (the peer's count); 0 = the
                                ** task's `samples` (the peer takes it as an argument) */
    long max_new_tokens;        /* the answer budget: tokens generated after the prompt */
    int budget_gold;            /* 1: the budget is instead the gold's own tokens (encoded as a prompt,
                                ** its begin dropped), and the score compares token ids (LongLoRA) */
    int stop_newline;           /* 1: the output ends before its first newline (EOS always ends it) */
    const char *stop_text;      /* the output ends before the first occurrence of this, or NULL */
    double temperature;         /* 0 = greedy; > 0 sampled, per-seed Philox draws (lenx generate's) */
    long top_k;                 /* sampled: among the top_k largest logits only (0 = all) */
    enum lx_length_rule length; /* how L is counted */
};

extern const struct lx_protocol lx_protocols[];
extern const int lx_n_protocols;

/* The preset (task, name); NULL when there is none. */
const struct lx_protocol *lx_protocol_find(const char *task, const char *name);

#endif
