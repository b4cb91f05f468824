# Thin wrapper over CMake. `make run` and `make test` are the README's two commands.
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
SOAK_SECONDS ?= 600
DATA_DIR ?= ./floe-data

.PHONY: all deps build asan run test unit fuzz-replay integration fuzz bench bench-catalog bench-nodes bench-parquet bench-compact bench-sink compat compat-quick compat-sink-handoff soak soak-sink demo clean

all: build

deps:
	@bash scripts/install-deps.sh

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

asan:
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFL_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

run: deps build
	$(BUILD)/floe serve --data-dir $(DATA_DIR)

unit: build asan
	$(BUILD)/floe_unit
	$(ASAN_BUILD)/floe_unit

fuzz-replay: asan
	@bash scripts/fuzz-replay.sh $(ASAN_BUILD)

integration: build
	FLOE_BIN=$(abspath $(BUILD))/floe .venv/bin/python -m pytest -q tests/integration

test: deps
	@bash scripts/test.sh

fuzz:
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@bash scripts/fuzz-run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

compat: build
	@bash tests/compat/all.sh
	@$(MAKE) --no-print-directory compat-sink-handoff

# a table filled by the JVM Iceberg sink, continued by floe sink from the same consumer group
compat-sink-handoff: deps build
	@.venv/bin/python tests/compat/sink_handoff.py

compat-quick: build
	@bash tests/compat/ci.sh

soak: deps build
	@SOAK_SECONDS=$(SOAK_SECONDS) .venv/bin/python tests/compat/soak.py
	@$(MAKE) --no-print-directory soak-sink

# floe sink's fault tests at length: 50 SIGKILLs of the sink while producing (every fifth one
# between a table commit and the group offsets), 50 rounds of killing the sink or floe serve
# mid-commit, and 40 rounds of three members killed and added (make test runs 6, 4 and 5)
soak-sink: deps build
	FLOE_BIN=$(abspath $(BUILD))/floe FLOE_SINK_KILLS=50 FLOE_SINK_KILL_ROUNDS=50 FLOE_SINK_CHURN_ROUNDS=40 \
	  .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=1800 \
	  tests/integration/test_sink.py::test_sigkill_while_producing_exactly_n \
	  tests/integration/test_sink_serve_kill.py tests/integration/test_sink_churn.py

demo: deps build
	@bash tests/compat/demo.sh

# benchmark servers take their ports from another range than the tests' (tests/free_port.py)
bench bench-%: export FLOE_PORTS ?= 5000-14999

bench: build
	@bash bench/run.sh

bench-catalog: build
	@bash bench/catalog.sh

# 1 and 3 floe nodes behind HAProxy on PostgreSQL and a shared store (about 2 minutes)
bench-nodes: build
	@FLOE_BIN=$(abspath $(BUILD))/floe .venv/bin/python bench/nodes.py

bench-parquet: deps build
	@.venv/bin/python bench/parquet.py

bench-compact: deps build
	@.venv/bin/python bench/compact_vs_spark.py

bench-sink: deps build
	@.venv/bin/python bench/sink.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
