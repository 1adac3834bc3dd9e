# aotc developer tasks. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
AOTC   := $(VENV)/bin/aotc
CC     ?= cc
JOBS   ?= 2

.PHONY: install test demo protos docs lint clean bench bench-env bench-compile fuzz

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

test: install
	$(PY) -m pytest -q -n $(JOBS)

demo: install
	$(AOTC) compile examples/mlp/mlp.pb -c configs/mlp.yaml -o build/mlp
	$(CC) -std=c99 -O2 -Wall -Wextra -pedantic examples/mlp/main.c build/mlp.o -Ibuild -lm -o build/mlp_demo
	./build/mlp_demo

# Fuzzing (not a test): tools/fuzz for FUZZ_MINUTES, new findings minimized into tests/data/fuzz.
FUZZ_MINUTES ?= 30
FUZZ_ARGS ?=

fuzz: install
	$(PY) -m tools.fuzz --minutes $(FUZZ_MINUTES) $(FUZZ_ARGS)

protos: install
	$(PY) tools/gen_protos.py

docs: install
	$(AOTC) ops --format markdown > docs/ops.md

lint: install
	$(VENV)/bin/ruff check aotc tests tools
	$(VENV)/bin/ruff format --check aotc tests tools
	$(VENV)/bin/mypy aotc

# Benchmark (not a test): a separate venv with TensorFlow, onnxruntime, tf2onnx (created once;
# BENCH_VENV=... reuses another), then bench/run.py writes bench/RESULTS.md and RESULTS.json.
# E.g. make bench BENCH_ARGS='--quick --models gemm,lenet --no-tfcompile'
BENCH_VENV ?= build/bench-venv
BENCH_ARGS ?=

bench-env: $(BENCH_VENV)/.bench-installed

$(BENCH_VENV)/.bench-installed: bench/requirements.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -r bench/requirements.txt
	touch $@

bench: install bench-env
	$(BENCH_VENV)/bin/python bench/run.py --aotc $(AOTC) $(BENCH_ARGS)

# Compile cost (not a test): big synthetic graphs (a 20,000-op chain, AddN and ConcatV2 of
# 5,000 feeds, a doubling function library; fails past COMPILE_LIMIT seconds per case), then
# COMPILE_MODELS beside tfcompile (seconds, peak memory) into bench/COMPILE.md; the models are
# built with the bench venv's TensorFlow (make bench-env) into build/bench-models.
COMPILE_LIMIT ?= 120
COMPILE_MODELS ?= bench_mobilenet_v2,bench_efficientnet_b0,bench_vgg16
bench-compile: install
	$(PY) -m tools.bench_compile --limit $(COMPILE_LIMIT) --models $(COMPILE_MODELS) \
		--tf-python $(BENCH_VENV)/bin/python --write bench/COMPILE.md $(BENCH_ARGS)

clean:
	rm -rf build
