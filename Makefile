# Thin wrapper: every real rule lives in CMake. `make run` and `make test` work
# on a fresh Debian machine (scripts/bootstrap.sh installs what is missing).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
CONFIG     ?= config/pprofgate.yaml
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 20

.PHONY: all build run test test-unit test-asan fuzz fuzz-smoke bench bootstrap clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/pprofgate --config $(CONFIG)

# Everything: unit + integration tests on the release build, the unit tests
# again under ASan+UBSan, then a short libFuzzer pass over every parser.
test: build
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPG_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@bash scripts/run-tests.sh $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

test-unit: build
	cd $(BUILD) && ctest -L unit --output-on-failure

fuzz: bootstrap
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPG_FUZZ=ON -DPG_TESTS=OFF >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@bash bench/run-all.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
