# Thin wrapper around CMake + CTest. Every target installs missing Debian packages first.
#   make sim   [POD=<name>] [ARGS="--matmul 128x64x64"]  the pod demo: a data-parallel matmul on a
#                                                       slice of Verilated chips in the SystemC pod
#                                                       and on the golden pod, compared (POD=1x1:
#                                                       one chip; pods in configs/pods.json)
#   make sim-chip [PRESET=<name>] [ARGS="--matmul 512x256x1024 --bias --relu"]
#                                                       an MLP (or ARGS) on one Verilated chip and
#                                                       on the golden interpreter, compared
#                                                       (PRESET=v2 builds the v2 chip first)
#   make test [SANITIZE=1]                              the regression (tiny, small, small_model, odd, wide);
#                                                       SANITIZE=1: built with ASan and UBSan in build-asan
#   make wave  TEST=<test> [SEED=<n>] [PRESET=<name>] [CHIP=<x,y>]
#                                                       rerun one test with FST waves (a pod
#                                                       test: every chip's, or chip x,y's)
#   make lint                                           verilator --lint-only -Wall, every top
#   make bench                                          build/reports/{mxu,ici,hbm,chip,pod,collectives,train,numerics}.json,
#                                                       ici.svg, then make plots (builds the v2 chip)
#   make plots                                          build/reports/plots/*.png and *.svg from the
#                                                       reports that are there (scripts/plots.py)
#   make soak  [SOAK_MINUTES=30] [SOAK_ONLY=ici,chip]   the soak campaign: every block's soak tests
#                                                       with fresh seeds on every core until each
#                                                       block's figure; build/reports/soak.json
#   make coverage                                       line and toggle coverage of the RTL tests
#                                                       (build-cov/): build/coverage/,
#                                                       build/reports/coverage.json
#   make area  [AREA_PRESETS=tiny,odd,small,v2] [AREA_BLOCKS=mxu_acc,core]
#                                                       yosys synthesis of every RTL block: cells,
#                                                       NAND2 equivalents, SRAM bits, mm^2 at 16 nm,
#                                                       the fits to v2; build/reports/area.json
#   make formal [FORMAL_PROOFS=fifo_d3,link] [FORMAL_DEPTH_SCALE=1]
#                                                       proofs of the primitives (yosys-smtbmc, z3,
#                                                       ABC): FIFO, arbiter, link layer; a violation
#                                                       as an FST trace; build/reports/formal.json
#   make fuzz  [FUZZ_SECONDS=60] [FUZZ_TARGETS="asm tpb"]
#                                                       the front ends' libFuzzer targets (clang, ASan,
#                                                       UBSan) in build-fuzz/, each for FUZZ_SECONDS
SHELL  := /bin/bash
.SHELLFLAGS := -o pipefail -c
# SANITIZE=1: AddressSanitizer and UndefinedBehaviorSanitizer on everything built (our C++, the
# Verilated models, the harnesses), in a build directory of its own.
SANITIZE ?=
ifeq ($(SANITIZE),1)
BUILD  ?= build-asan
SAN_FLAGS := -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
             -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
else
BUILD  ?= build
SAN_FLAGS :=
endif
JOBS   ?= 2
PRESET ?= $(shell sed -n 's/.*"default": *"\([^"]*\)".*/\1/p' configs/presets.json)
# The preset names, one a line: the keys of configs/presets.json's "presets" (not of its "bases").
PRESET_NAMES = sed -n '/^  "presets": {/,/^  }/s/^    "\([^"]*\)": {.*/\1/p' configs/presets.json
POD    ?= $(shell sed -n 's/.*"default": *"\([^"]*\)".*/\1/p' configs/pods.json)
ARGS   ?=
# make fuzz: its own build directory (clang, -DTP_FUZZ=ON: no Verilator), seconds per target, targets.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= asm tpb preset trace layers
# make coverage: its own build directory (-DTP_COVERAGE=ON), the CTest labels of the RTL tests.
COV_BUILD  ?= build-cov
COV_LABELS ?= fp|ecc|vpu|mxu|ici|hbm|chip|pod

.PHONY: all deps configure sim sim-chip test wave lint bench plots soak coverage area formal fuzz format clean
all: test

deps:
	@scripts/install-deps.sh

# Chips built for the tool and the chip benchmark only (TP_BIG_CHIP_PRESETS; no tests): make bench
# and make sim-chip PRESET=v2 add v2 (about 5 minutes to build on 2 cores, once), which the build
# directory then keeps.
BIG_CHIPS ?=
space := $(subst ,, )
bench: BIG_CHIPS = v2
sim-chip: BIG_CHIPS = $(filter v2,$(PRESET))

configure: deps
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(SAN_FLAGS) \
	  $(if $(BIG_CHIPS),-DTP_BIG_CHIP_PRESETS="$(subst $(space),;,$(strip $(BIG_CHIPS)))") > $(BUILD)/configure.log 2>&1 \
	  || { cat $(BUILD)/configure.log; echo "make: configuring failed (log: $(BUILD)/configure.log)"; exit 1; }

sim: configure
	@grep -q '"$(POD)": *{' configs/pods.json || { echo "make sim: unknown pod '$(POD)' (known pods: $$(sed -n 's/^    \"\([^\"]*\)\": {/\1/p' configs/pods.json | tr '\n' ' '))"; exit 2; }
	@echo "make sim: building the tensorpod tool with the Verilated chips and the SystemC pod (log: $(BUILD)/sim-build.log)"
	@cmake --build $(BUILD) --target tensorpod -j $(JOBS) > $(BUILD)/sim-build.log 2>&1 \
	  || { tail -40 $(BUILD)/sim-build.log; echo "make sim: the build failed (log: $(BUILD)/sim-build.log)"; exit 1; }
	@mkdir -p $(BUILD)/reports
	@$(BUILD)/sw/tensorpod pod --backend both --pod $(POD) $(if $(ARGS),$(ARGS),--demo) --report $(BUILD)/reports/sim.json

sim-chip: configure
	@$(PRESET_NAMES) | grep -qxF '$(PRESET)' || { echo "make sim: unknown preset '$(PRESET)' (known presets: $$($(PRESET_NAMES) | tr '\n' ' '))"; exit 2; }
	@echo "make sim-chip: building the tensorpod tool with the Verilated chip (log: $(BUILD)/sim-build.log)"
	@cmake --build $(BUILD) --target tensorpod -j $(JOBS) > $(BUILD)/sim-build.log 2>&1 \
	  || { tail -40 $(BUILD)/sim-build.log; echo "make sim: the build failed (log: $(BUILD)/sim-build.log)"; exit 1; }
	@mkdir -p $(BUILD)/reports
	@$(BUILD)/sw/tensorpod run --backend both --config $(PRESET) $(if $(ARGS),$(ARGS),--demo) --report $(BUILD)/reports/sim-chip.json

test: configure
	@cmake --build $(BUILD) --target tests -j $(JOBS)
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 900

wave: configure
	@test -n "$(TEST)" || { echo "usage: make wave TEST=<test name> [SEED=<n>] [PRESET=<name>] [CHIP=<x,y>]"; exit 2; }
	@scripts/install-deps.sh gtkwave
	@cmake --build $(BUILD) --target tests -j $(JOBS) | grep -v '^\[' || true
	@scripts/wave.sh "$(BUILD)" "$(TEST)" "$(SEED)" "$(PRESET)" "$(CHIP)"

lint: configure
	@cmake --build $(BUILD) --target lint

bench: configure
	@cmake --build $(BUILD) --target bench -j $(JOBS)
	@$(PLOTS)

# The soak campaign (docs/verification.md, "Soak campaigns"): not part of make test.
SOAK_MINUTES ?= 30
soak: configure
	@cmake --build $(BUILD) --target tests -j $(JOBS) > $(BUILD)/soak-build.log 2>&1 \
	  || { tail -40 $(BUILD)/soak-build.log; echo "make soak: the build failed (log: $(BUILD)/soak-build.log)"; exit 1; }
	@python3 scripts/soak.py --build $(BUILD) --minutes $(SOAK_MINUTES) $(if $(SOAK_ONLY),--only $(SOAK_ONLY),)

# Coverage (docs/verification.md, "Coverage"): make test's RTL tests on models Verilated with line
# and toggle coverage in $(COV_BUILD), merged by verilator_coverage: an annotated report in
# $(BUILD)/coverage/ and $(BUILD)/reports/coverage.json per module.
coverage: deps
	@mkdir -p $(COV_BUILD)
	@cmake -S . -B $(COV_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTP_COVERAGE=ON > $(COV_BUILD)/configure.log 2>&1 \
	  || { cat $(COV_BUILD)/configure.log; echo "make coverage: configuring failed (log: $(COV_BUILD)/configure.log)"; exit 1; }
	@echo "make coverage: building the tests with coverage (log: $(COV_BUILD)/build.log)"
	@cmake --build $(COV_BUILD) --target tests -j $(JOBS) > $(COV_BUILD)/build.log 2>&1 \
	  || { tail -40 $(COV_BUILD)/build.log; echo "make coverage: the build failed (log: $(COV_BUILD)/build.log)"; exit 1; }
	@rm -rf $(COV_BUILD)/coverage/dat
	@ctest --test-dir $(COV_BUILD) -j $(JOBS) --timeout 1800 -L '$(COV_LABELS)' > $(COV_BUILD)/ctest.log 2>&1 \
	  || { grep -E 'tests passed|Failed|\*\*\*' $(COV_BUILD)/ctest.log | tail -20; echo "make coverage: tests failed (log: $(COV_BUILD)/ctest.log)"; exit 1; }
	@mkdir -p $(BUILD)/reports
	@python3 scripts/coverage.py --dat $(COV_BUILD)/coverage/dat --annotate $(BUILD)/coverage \
	  --out $(BUILD)/reports/coverage.json --waivers tb/coverage_waivers.txt

# Area (docs/area.md): yosys synthesis of every block at the test presets (the n^2 blocks at a
# sweep of small n, fitted), no build needed; about two hours of yosys time (one yosys at a time).
AREA_PRESETS ?= tiny,odd,small,v2
AREA_BLOCKS  ?=
area: deps
	@python3 scripts/area.py --presets $(AREA_PRESETS) $(if $(AREA_BLOCKS),--blocks $(AREA_BLOCKS),) \
	  --work $(BUILD)/area --out $(BUILD)/reports/area.json

# Formal proofs (docs/verification.md, "Formal proofs"): no build needed; gtkwave for vcd2fst (the
# counterexamples as FST). The link proof's bounded check takes most of the time (minutes).
FORMAL_PROOFS      ?=
FORMAL_DEPTH_SCALE ?= 1
formal: deps
	@scripts/install-deps.sh gtkwave
	@python3 scripts/formal.py $(if $(FORMAL_PROOFS),--proofs $(FORMAL_PROOFS),) --depth-scale $(FORMAL_DEPTH_SCALE) \
	  --work $(BUILD)/formal --out $(BUILD)/reports/formal.json

# Needs only python3 and python3-matplotlib (no build): plots whatever reports $(BUILD)/reports has.
PLOTS = python3 scripts/plots.py --reports $(BUILD)/reports --out $(BUILD)/reports/plots --ici-svg $(BUILD)/reports/ici.svg
plots: deps
	@$(PLOTS)

# The fuzz targets of tb/fuzz (docs/verification.md, "Fuzzing"), built with clang in $(FUZZ_BUILD)
# (libclang-rt-dev provides libFuzzer, llvm the symbolizer), each run for FUZZ_SECONDS over its
# corpus after its regression inputs; fails if any target finds something (build-fuzz/crashes/).
fuzz:
	@scripts/install-deps.sh clang libclang-rt-dev llvm
	@mkdir -p $(FUZZ_BUILD)
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTP_FUZZ=ON \
	  > $(FUZZ_BUILD)/configure.log 2>&1 \
	  || { cat $(FUZZ_BUILD)/configure.log; echo "make fuzz: configuring failed (log: $(FUZZ_BUILD)/configure.log)"; exit 1; }
	@grep -q '^CMAKE_CXX_COMPILER:.*clang' $(FUZZ_BUILD)/CMakeCache.txt \
	  || { echo "make fuzz: $(FUZZ_BUILD) was configured with another compiler than clang; remove it and rerun"; exit 1; }
	@echo "make fuzz: building the fuzz targets with clang, ASan and UBSan (log: $(FUZZ_BUILD)/build.log)"
	@cmake --build $(FUZZ_BUILD) --target fuzz -j $(JOBS) > $(FUZZ_BUILD)/build.log 2>&1 \
	  || { tail -40 $(FUZZ_BUILD)/build.log; echo "make fuzz: the build failed (log: $(FUZZ_BUILD)/build.log)"; exit 1; }
	@tb/fuzz/run_fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
