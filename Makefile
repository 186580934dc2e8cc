# Thin wrapper: every real rule lives in CMake. `make run` and `make test` work
# on a fresh Debian machine (scripts/bootstrap.sh installs what is missing):
# `make run` installs the runtime/build packages and builds the gateway alone,
# `make test` adds the test peers (clang, wrk, Node packages) and builds all.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
TSAN_BUILD ?= build-tsan
CONFIG     ?= config/pprofgate.yaml
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 20
RUN_LOG    ?= $(BUILD)/make-run.log
TEST_LOG   ?= $(BUILD)/make-test.log
OTELCOL    ?= $(BUILD)/collector/pg-otelcol
# Recursive makes (cmake's generated Makefiles) would print a
# "gmake[N]: Entering directory" pair per target.
MAKEFLAGS  += --no-print-directory
# One step: a line saying what it does, the output in a log, short progress.
STEP        = bash scripts/build-step.sh

.PHONY: all build gateway run test test-unit test-asan test-tsan fuzz fuzz-smoke bench bootstrap bootstrap-test clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

bootstrap-test:
	@echo "checking the build and test packages (scripts/bootstrap.sh --test installs what is missing)"
	@bash scripts/bootstrap.sh --test

build: bootstrap-test
	@mkdir -p $(BUILD) && : >$(TEST_LOG)
	@$(STEP) $(TEST_LOG) "building the gateway, tests and benches in $(BUILD) (release; log: $(TEST_LOG))" \
	    sh -c 'cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build $(BUILD) -j $(JOBS)'

# The gateway binary only (no tests, benches or peers).
gateway: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target pprofgate

# A line per step, short progress lines while it builds; the whole build
# output goes to $(RUN_LOG) (its tail is shown if that fails).
run:
	@mkdir -p $(BUILD) && : >$(RUN_LOG)
	@echo "make run: checking the build packages (scripts/bootstrap.sh installs what is missing)"
	@bash scripts/bootstrap.sh
	@$(STEP) $(RUN_LOG) "make run: building the gateway in $(BUILD) (a minute or two the first time; log: $(RUN_LOG))" \
	    sh -c 'cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build $(BUILD) -j $(JOBS) --target pprofgate'
	@echo "make run: starting $(BUILD)/pprofgate --config $(CONFIG)"
	@exec $(abspath $(BUILD))/pprofgate --config $(CONFIG)

test:
	@echo "make test: packages, the release build, the ASan+UBSan build and the OpenTelemetry Collector (its first build takes several minutes), then every suite"
	@$(MAKE) build
	@$(STEP) $(TEST_LOG) "make test: building the ASan+UBSan tree in $(ASAN_BUILD)" \
	    sh -c 'cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPG_SANITIZE=ON && cmake --build $(ASAN_BUILD) -j $(JOBS)'
	@$(STEP) --may-skip $(TEST_LOG) "make test: building the OpenTelemetry Collector for the interop tests (the first build takes several minutes; later ones seconds)" \
	    bash tests/interop/collector/build.sh $(OTELCOL) || \
	    echo "    the interop tests will report it (interop/collector_build)"
	@bash scripts/run-tests.sh $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)

test-unit: build
	cd $(BUILD) && ctest -L unit --output-on-failure

# The tests labelled "threads" under ThreadSanitizer (make test runs them too).
test-tsan: bootstrap-test
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_TSAN=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target pg_threaded_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS="$${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1 suppressions=$(abspath tests/tsan.supp)}" \
	    ctest -L threads --output-on-failure

fuzz: bootstrap-test
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPG_FUZZ=ON -DPG_TESTS=OFF >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@bash bench/run-all.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)
