/*
** tasks/preset.h - a retrieval cell run by a protocol preset that reads its
** peer's own test cases (tasks/protocols.h, tasks/peer.h): the prompt exactly
** as the peer's file holds it, then an answer generated apart from the gold
** (the preset's budget of new tokens, its stop rules, greedy or sampled with
** per-seed Philox draws, the KV cache sized for prompt + budget), scored by
** the preset's named scorer (tasks/scorers.h). docs/tasks.md#protocol-presets.
*/
#ifndef LX_PRESET_H
#define LX_PRESET_H

#include <stdint.h>

#include "harness/core/lx.h"
#include "harness/engine/data/instance.h"
#include "tasks/protocols.h"

struct lx_task_ctx;
struct lx_result;

/* The preset `protocol` of `task` with its data file: 0 when protocol is
** "lenx" (today's instances; data must then be empty), 1 when a preset with
** a data reader governs (*out set; the file read once to check it), < 0 with
** err filled when there is none or the data are missing or malformed. */
int lx_preset_check(const char *task, const char *protocol, const char *data, const struct lx_protocol **out,
                    struct lx_error *err);

/* Test case `sample` of the file (or of the `samples` made for the cell's key
** and length, when the preset takes the task's count; the fit in byte tokens) as
** a byte instance: [BOS] + the prompt's bytes, answer_off = n (the answer is
** generated, not part of the window), gold = the first gold (cut to
** LX_MAX_ANSWER bytes; scoring reads them all). */
int lx_preset_instance(const struct lx_protocol *p, const char *data, uint64_t key, long length, long samples,
                       long sample, struct lx_instance *out, struct lx_error *err);

/* The bytes of text[0, n) the output keeps under p's stop rules: up to its
** first newline (stop_newline) or its first stop_text, whichever is first
** (EOS has already ended the decode). */
long lx_preset_cut(const struct lx_protocol *p, const char *text, long n);

/* The cell: every test case of the file (or the preset's made ones), in the model's tokenizer ([begin] +
** the prompt encoded as one segment), generated and scored. Metrics: acc
** (the scorer's mean), acc_se, null_rate, n_samples, prompt_tokens (the
** measured mean, beside the cell's nominal length), prompt_tokens_min and _max,
** max_new_tokens; every output with its stop reason. */
int lx_preset_run(const struct lx_task_ctx *ctx, const struct lx_protocol *p, const char *data, long samples,
                  struct lx_result *out, struct lx_error *err);

#endif
