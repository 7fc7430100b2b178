# The two commands of the README:
#   make demo   installs what is missing, builds and installs gpusched, runs the built-in demo
#   make test   installs what is missing, builds everything, runs every C++ and Python test
# and, not part of those two:
#   make fuzz   installs clang, builds the libFuzzer targets (build/fuzz) and runs each for
#               FUZZ_SECONDS (tests/fuzz/README.md), then the invariant test over
#               INVARIANT_SCENARIOS random scenarios (RELIABILITY.md)
PYTHON ?= python3
JOBS ?= 2
BUILD ?= build/cpp
OUT ?= out/demo
INVARIANT_SCENARIOS ?= 5000
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)

.PHONY: all deps install demo build cpp-test py-test test fuzz clean

all: demo

deps:
	@PYTHON=$(PYTHON) ./tools/install-deps.sh

# The Python package (and with it the `gpusched` command). Incremental: build/py is reused.
install: deps
	$(PYTHON) -m pip install -q --no-build-isolation .

demo: install
	$(PYTHON) -m gpusched demo --out $(OUT)

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSCHED_BUILD_TESTS=ON -DGPUSCHED_BUILD_BENCH=ON
	cmake --build $(BUILD) -j$(JOBS)

cpp-test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

py-test: install
	$(PYTHON) -m pytest -q tests/python

test: cpp-test py-test

fuzz: install
	@FUZZ=1 PYTHON=$(PYTHON) ./tools/install-deps.sh
	JOBS=$(JOBS) ./tests/fuzz/run_fuzz.sh
	GPUSCHED_INVARIANT_SCENARIOS=$(INVARIANT_SCENARIOS) GPUSCHED_INVARIANT_SEED0=280 \
	  $(PYTHON) -m pytest -q tests/python/test_invariants.py -k random_scenario -p no:cacheprovider

clean:
	rm -rf build out
