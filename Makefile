# Two commands work on a fresh clone (see README, Quick start):
#   make demo   set up .venv, run the batch job on samples/, print the summary
#   make test   set up .venv, run ruff and the whole test suite
# and `make fresh-check` runs both in a clone of HEAD with nothing beside it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= out/demo

.PHONY: demo demo-stream test fresh-check lint samples schema templates bench bench-scale eval fuzz

# Every install here takes the Beam the image pins (deploy/Dockerfile's BEAM_VERSION), the
# one the suite, the flag table (pipelines/flags.json) and the benchmarks were made on.
# pyproject.toml takes a range, for a pipeline that embeds the packer beside its own Beam;
# an install without the pin took the newest release in the range, whose flags the
# committed flag table does not list, and the suite failed on the day one came out.
BEAM_PIN := apache-beam[gcp]==$(shell sed -n 's/^ARG BEAM_VERSION=//p' deploy/Dockerfile)

# The console script is the marker of an install; reinstall when pyproject, the pinned Beam
# or the C kernels change (the editable install builds packer/_native.c and _pretokenize.c
# in place).
$(BIN)/evpack: pyproject.toml setup.py deploy/Dockerfile packer/_native.c packer/_pretokenize.c packer/_pretokenize_table.h
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,report]' '$(BEAM_PIN)'
	touch $@

# The round trip too: prompts as Anthropic Message Batches requests (for the config's
# models.anthropic_batch, a claude-* model), the hand-written
# results of samples/answers_anthropic_good_and_bad.jsonl verified, and the report.
demo: $(BIN)/evpack
	$(BIN)/evpack batch --input samples/requests.jsonl --catalog samples/catalog.jsonl \
		--config samples/config.yaml --output $(OUT) --overwrite
	$(BIN)/evpack batch --input samples/requests.jsonl --catalog samples/catalog.jsonl \
		--config samples/config.yaml --prompt_format anthropic_batch \
		--event_time 2026-07-01T00:00:00Z --output $(OUT)/roundtrip --overwrite > /dev/null
	$(BIN)/evpack verify --answers samples/answers_anthropic_good_and_bad.jsonl \
		--run $(OUT)/roundtrip --requests samples/requests.jsonl --overwrite
	$(BIN)/evpack report --audit $(OUT)/roundtrip --out $(OUT)/roundtrip/report

lint: $(BIN)/evpack
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The emulator tests need the Pub/Sub (Java) and Bigtable emulators, bqemulator,
# gcp-storage-emulator and Chromium (the report's test): set up once.
$(VENV)/.emulators-ready: $(BIN)/evpack .ci/setup-emulators
	PYTHON=$(BIN)/python BEAM_PIN='$(BEAM_PIN)' .ci/setup-emulators
	touch $@

# The suite also smoke-tests the benchmark commands, so it needs the bench extra.
# It runs in TEST_WORKERS processes, whole files to a process (module fixtures run once),
# each with its own emulators: much of it waits on emulators and pipeline subprocesses, so
# two processes on two cores take 14 minutes where one took 23. Rejected: a worker per
# core (`-n auto`): each starts four emulators, two JVMs among them, which a many-core
# machine does not need.
TEST_WORKERS ?= 2
test: lint $(VENV)/.emulators-ready $(VENV)/.bench-installed
	NO_GCE_CHECK=true $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile

# Before every release and every resolved issue (docs/development.md): the README's two
# commands, as written, in a clone of HEAD in an empty temporary folder, so that nothing
# beside the checkout (evaluation data, a venv, built files) can make them pass. The clone is
# removed when both pass and kept, named, when one fails.
fresh-check:
	@dir=$$(mktemp -d); rev=$$(git rev-parse HEAD); \
	git clone --quiet --no-checkout . "$$dir/evidence-packer" && \
	cd "$$dir/evidence-packer" && git checkout --quiet "$$rev" && \
	echo "fresh-check: $$rev in $$PWD" && \
	MAKEFLAGS= make PYTHON="$(PYTHON)" demo && MAKEFLAGS= make PYTHON="$(PYTHON)" test && \
	{ rm -rf "$$dir"; echo "fresh-check: passed"; } || \
	{ echo "fresh-check: FAILED, the clone is kept in $$dir"; exit 1; }

# Both emulators, the streaming job, samples/ published to Pub/Sub, a summary read back.
demo-stream: $(VENV)/.emulators-ready
	$(BIN)/python -m tests.demo_stream

samples: $(BIN)/evpack
	$(BIN)/python samples/generate.py

schema: $(BIN)/evpack
	$(BIN)/evpack schema

# The flex templates' deploy/*/metadata.json and the flag table pipelines/flags.json
# (`evpack --help` and unknown flags answered before Beam loads), from the options.
templates: $(BIN)/evpack
	$(BIN)/python -m pipelines.options.templates
	$(BIN)/python -m pipelines.flag_table

# Benchmarks and evaluation (benchmarks/): they read the public QA data from DATA
# (see ../shared/data/README.md) and rewrite benchmarks/results/REPORT.md and plots.
DATA ?= ../shared/data

$(VENV)/.bench-installed: $(BIN)/evpack
	$(BIN)/python -m pip install --quiet -e '.[test,report,bench]' '$(BEAM_PIN)'
	touch $@

bench: $(VENV)/.bench-installed
	$(BIN)/python -m benchmarks.startup
	$(BIN)/python -m benchmarks.speed --data-dir $(DATA)
	$(BIN)/python -m benchmarks.bomb --work-dir out/bomb
	$(BIN)/python -m benchmarks.report

# The catalog modes against catalogs of 10k to 5M documents (needs the Bigtable emulator).
bench-scale: $(VENV)/.bench-installed $(VENV)/.emulators-ready
	$(BIN)/python -m benchmarks.scale --repeat 3
	$(BIN)/python -m benchmarks.report

eval: $(VENV)/.bench-installed
	$(BIN)/python -m benchmarks.quality --data-dir $(DATA)
	$(BIN)/python -m benchmarks.verification --data-dir $(DATA)
	$(BIN)/python -m benchmarks.meaning --data-dir $(DATA)
	$(BIN)/python -m benchmarks.yes_no_sides
	$(BIN)/python -m benchmarks.report

# Coverage-guided fuzzing of the parse boundary with atheris (tests/fuzz_atheris.py):
# optional and not part of `make test`; it stops on the first finding (crash-* file).
FUZZ_SECONDS ?= 60
FUZZ_FLAGS ?=

$(VENV)/.fuzz-installed: $(BIN)/evpack
	$(BIN)/python -m pip install --quiet -e '.[test,report,fuzz]'
	touch $@

fuzz: $(VENV)/.fuzz-installed
	$(BIN)/python -m tests.fuzz_atheris -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS)
