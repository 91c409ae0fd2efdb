/*
** harness/engine/model/calibrate.h - the probe a calibrating method (t5align) measures a
** trained model through: the model runs on corpus text, in the model's own
** tokens (lx_corpus_tokens; the bytes for a byte model), at the training length
** and at the cell's length, and the attention rows of every layer and head
** (or layer 0) are summarised as mean max probability, mean entropy and mean
** per-row logit standard deviation (spec.h, struct lx_probe_stats).
*/
#ifndef LX_CALIBRATE_H
#define LX_CALIBRATE_H

#include "harness/engine/data/corpus.h"
#include "harness/engine/model/model.h"

/* Calibrate spec (compiled for the cell's length) on model m; spec_train is
** the same stack compiled at the training length, the reference side. */
int lx_calibrate_model(struct lx_spec *spec, const struct lx_spec *spec_train, const struct lx_model *m,
                       const struct lx_corpus_tokens *text, int bos, struct lx_error *err);

/* Statistics of m's attention on `n_windows` windows of T tokens of text under
** spec (its temperature included), a causal window starting with bos (bos < 0:
** T tokens of text, a model trained without a start token): the probe's
** measurement, also used by diagnostics. */
int lx_attn_probe(const struct lx_model *m, const struct lx_spec *spec, const struct lx_corpus_tokens *text, int bos,
                  int T, long n_windows, int layer0, struct lx_probe_stats *out, struct lx_error *err);

#endif
