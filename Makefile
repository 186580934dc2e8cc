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

.PHONY: all build gateway run test test-unit test-asan test-tsan fuzz fuzz-smoke bench bootstrap bootstrap-test clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

bootstrap-test:
	@bash scripts/bootstrap.sh --test

build: bootstrap-test
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The gateway binary only (no tests, benches or peers).
gateway: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target pprofgate

# Installs and builds quietly into $(RUN_LOG) (its tail is shown if that
# fails), so the first line on the terminal is pprofgate's own.
run:
	@mkdir -p $(BUILD)
	@if ! $(MAKE) --no-print-directory gateway >$(RUN_LOG) 2>&1; then \
	    tail -n 40 $(RUN_LOG) >&2; echo "make run: the build failed; full log: $(RUN_LOG)" >&2; exit 1; fi
	@exec $(abspath $(BUILD))/pprofgate --config $(CONFIG)

test: build
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPG_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
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
