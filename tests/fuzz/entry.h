/*
** tests/fuzz/entry.h - the entry points the fuzz targets and their regression
** test share: one untrusted input in, a clean return out.
**
** Each takes raw bytes, runs them through the same path a user's file takes
** (nothing is run or written beyond a scratch file of the input's own), and
** returns LX_OK or a negative LX_E* code with err->msg filled. A signal, an
** assertion or a sanitizer report on any input is a bug: libFuzzer reports it
** as a crash (`make fuzz`), and the input goes to tests/fuzz/regress/<target>/,
** which tests/test_fuzz_regress.c replays through the same function.
*/
#ifndef LX_FUZZ_ENTRY_H
#define LX_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "harness/core/lx.h"

/* YAML text -> lx_grid_load_text -> lx_plan_build: every plan-time check,
** nothing trained, evaluated or stored. */
int lx_fuzz_feed_config(const uint8_t *data, size_t n, struct lx_error *err);

/* Bytes as a .safetensors file -> lx_st_open (every tensor read back, the
** metadata looked up), then lx_model_load (the lenx checkpoint header: arch,
** training length, every tensor by name and shape), then a sweep planned on
** it as a `checkpoint:` model with its own training stack as the method. */
int lx_fuzz_feed_safetensors(const uint8_t *data, size_t n, struct lx_error *err);

#endif
