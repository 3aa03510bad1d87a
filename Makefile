# SPDX-License-Identifier: Apache-2.0
# ffs-tofino: build the Tofino program (SDE), run the software switch, run the tests.
# `make help` lists the targets.

PYTHON ?= python3
PIP    ?= $(PYTHON) -m pip

# The chip (needs the SDE): CHIP=tofino (TNA, the default) or tofino2 (T2NA). It selects the
# build, the install, the PTF runner's port map and test ports, the differential and the demo.
# TARGET=tofino|tofino2 and ARCH=tofino2 (t2na, tf2) are accepted for it too; TARGET otherwise
# names where the PTF suite runs (make ptf TARGET=tofino-model).
ifneq ($(origin CHIP),command line)
  ifneq ($(filter tofino tofino2,$(TARGET)),)
    CHIP := $(TARGET)
  else ifneq ($(filter tofino2 tf2 t2na,$(ARCH)),)
    CHIP := tofino2
  endif
endif
CHIP     ?= tofino
ifeq ($(filter tofino tofino2,$(CHIP)),)
  $(error CHIP=$(CHIP): use CHIP=tofino or CHIP=tofino2)
endif
BUILD    ?= build/$(CHIP)
P4SRC    ?= p4src/ffs.p4
P4DEPS   := $(sort $(shell find p4src -name '*.p4'))
ifeq ($(CHIP),tofino2)
  P4ARCH := t2na
  BIN  := tofino2.bin
  P4FLAGS_TARGET := -DTOFINO2
else
  P4ARCH := tna
  BIN  := tofino.bin
  P4FLAGS_TARGET :=
endif
# the name the program is installed and run under (run_switchd.sh -p $(P4_PROGRAM)); make
# install-example installs the example under its own name, beside ffs
P4_PROGRAM ?= ffs
EXAMPLE_PROGRAM := l2l3_acl
# where the SDE keeps a program per chip, so that both chips' builds are installed side by side
PD_DIR   := share/$(CHIP)pd/$(P4_PROGRAM)
P4FLAGS ?=
# hardware needs the platform agent in ffs.conf; tofino-model must not load it
PLATFORM ?= model
ifeq ($(PLATFORM),hw)
  AGENT0_LINE := "agent0": "lib/libpltfm_mgr.so",
else
  AGENT0_LINE :=
endif

TOPO     ?= topologies/dumbbell.yaml
DURATION ?= 20
DURATION_MODEL ?= 60

.PHONY: help constants names setup wheel system-deps test test-minimum test-latest unit-tests build build-tofino build-tofino2 compile example example-ffs example-alone install-example p4-resources install-conf p4src-sha256 clean-build check-sde demo netns-up netns-down lint typecheck installed demo-tofino-model differential-model chain-model bench-switch bench-switchd ptf ptf-list results experiment-cca experiment-endpoint experiments-rtt bench-sim greedy-node csfq-paper resources-compared
help:
	@echo "make setup        install the ffs package and its test dependencies, at the versions of constraints/dev.txt"
	@echo "make wheel        dist/ffs_tofino-*-py38-none-any.whl: ffs-agent and ffsctl for a switch's Python (3.8+; docs/hardware.md)"
	@echo "make test         run every test (unit, software-switch, PTF on the software switch), after make lint and make typecheck"
	@echo "make unit-tests   the fast kinds of tests/ (unit, property, switch, agent, docs; not slow), after make lint and make typecheck"
	@echo "make lint         ruff over the tree; make typecheck: mypy (strict on the core packages)"
	@echo "make test-minimum the unit tests with the lowest versions pyproject.toml allows (constraints/minimum.txt), in build/"
	@echo "make test-latest  lint, typecheck and unit tests with the newest release of everything: reports what broke,"
	@echo "                  exits 0 (STRICT=1: fails); make setup and make test keep the pinned versions (constraints/dev.txt)"
	@echo "make constants    p4src/include/constants.p4 from controlplane/ffs/core/constants.py (generated, do not edit)"
	@echo "make names        controlplane/ffs/core/p4names.py from the compiled program's bf-rt.json (after make build; generated)"
	@echo "make build        compile p4src/ with the SDE's bf-p4c (CHIP=tofino|tofino2, PLATFORM=model|hw) and install it for that chip"
	@echo "make example      (SDE) compile p4src/examples/l2l3_acl.p4, FFS composed with L2/L3/ACL forwarding, with and without FFS"
	@echo "make install-example (SDE) the example with FFS, installed as $(EXAMPLE_PROGRAM) beside ffs (CHIP=tofino|tofino2)"
	@echo "make p4-resources (SDE) both programs on both targets, the compiler's figures into docs/pipeline.md"
	@echo "make clean-build  remove build/"
	@echo "make ptf          (root) the PTF suite on the software switch; TARGET=tofino-model [CHIP=tofino2] with an SDE; PTF_ARGS=test_parser"
	@echo "make ptf-list     the PTF tests and their groups"
	@echo "make demo         (root) FFS isolating a sender from a flood, live, on the software switch"
	@echo "make demo-tofino-model (root, SDE) the same on tofino-model + bf_switchd, with a matrix change halfway; CHIP=tofino2"
	@echo "make netns-up     (root) namespaces and veths of TOPO=$(TOPO); make netns-down removes them"
	@echo "make differential-model (root, SDE) the same probes through tofino-model and the software switch; PACKETS=3000, CHIP=tofino2"
	@echo "make chain-model  (root, SDE) two nodes (model + bf_switchd + ffs-agent each, a namespace each) in a chain:"
	@echo "                  PTF across them, and the differential across them; CHIP=tofino2, CHAIN_PACKETS=400"
	@echo "make bench-switch packets/s of the software switch (trace mode and live over veth)"
	@echo "make bench-switchd the agent's period on bf_switchd + tofino-model (SDE, compiled ffs, root)"
	@echo "make bench-sim    the exact allocator at Internet scale: time and memory of the network study, 500-10,000 ASes (under the heavy lock: long)"
	@echo "make results      every scenario of scenarios/ in virtual time (FFS, FIFO, CSFQ) -> docs/results/"
	@echo "make greedy-node  FFS §XI Figure 7: two interfaces, distributions of p.r/p.f, exact and packet by packet -> docs/results/greedy-node.json"
	@echo "make csfq-paper   the CSFQ baseline against the CSFQ paper (Fig. 4a, Table 4) and the label lie of FFS §VII-A -> docs/results/csfq-paper.json"
	@echo "make resources-compared  the Tofino resources of FFS beside Cebinae's and HCSFQ's, with their sources, in our units"
	@echo "make experiment-cca (root) real TCP CCA pairs through the live switch: FIFO, FFS-C100, FFS-C85"
	@echo "make experiment-endpoint (root) MinTime/MinLoss (ffs-transfer) against cubic and bbr through the live switch (FFS-C85, RI)"
	@echo "make experiments-rtt (root) both, at the paper's 10 ms one-way delay (the switch's own delay line, no netem)"
	@echo "                  -> docs/results/{cca-rtt,endpoint-rtt}, the paper | ours tables -> docs/results/rtt-tables.md;"
	@echo "                  and Table III with a 1000-frame queue (cca-rtt-deep); RTT_DELAY=10ms CCA_DURATION=15 CCA_BUFFER=65536"

# The versions make test is gated with (docs/testing.md); CONSTRAINTS= installs the newest instead
CONSTRAINTS ?= constraints/dev.txt
setup: system-deps
	$(PIP) install -q $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) -e '.[dev,lab]'
	@mkdir -p build && touch $(SETUP_STAMP)

# The wheel for a switch (docs/hardware.md): the ordinary build, pure Python (setup.py builds the
# software switch's C fast path for the editable install alone), so it installs on any Python >= 3.8;
# its dependencies are the agent's and ffsctl's alone ([lab] adds the rest)
wheel:
	rm -f dist/ffs_tofino-*.whl
	$(PIP) wheel -q --no-deps -w dist .
	@ls dist/ffs_tofino-*-py38-none-any.whl

# `make demo` installs only when nothing is installed yet or the packaging or the C fast path changed
# (an editable install picks up Python changes by itself)
SETUP_STAMP := build/.setup-stamp
$(SETUP_STAMP): pyproject.toml setup.py constraints/dev.txt controlplane/ffs/switch/_fastpath.c
	@mkdir -p build
	$(MAKE) --no-print-directory setup

# The stamp alone would lie to another Python (a new shell without the virtual environment, sudo):
# setup also runs when this $(PYTHON) cannot import the package.
installed: $(SETUP_STAMP)
	@$(PYTHON) -c "import ffs.lab.demo, ffs.switch.fast" 2>/dev/null || $(MAKE) --no-print-directory setup

# Live runs need iproute2 (namespaces, veth) and ethtool (offloads off); install them when root.
system-deps:
	@if ! command -v ip >/dev/null 2>&1 || ! command -v ethtool >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && apt-get install -y -qq iproute2 ethtool >/dev/null; \
	  else echo "note: install iproute2 and ethtool for live runs (namespaces, veth)" >&2; fi; fi

# pytest-xdist's workers, one a core: the tests marked `machine` (namespaces, the SDE, fixed ports,
# timing) all run in one of them in turn, the in-process ones in the others (tests/conftest.py).
# PYTEST_WORKERS= (or an environment without pytest-xdist) runs every test in pytest's own process.
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import xdist' >/dev/null 2>&1 && printf -- '-n auto')

# With an SDE that has bf-p4c, the tests also compile p4src/ for both chips and install both (the
# switchd and tofino-model tests load exactly the program of this checkout); without one they say
# they skip.
test:
	@if [ -n "$$SDE_INSTALL" ] && [ -x "$$SDE_INSTALL/bin/bf-p4c" ]; then \
	  $(MAKE) --no-print-directory -j2 -Otarget build-tofino build-tofino2 || exit 1; \
	else echo "make test: no SDE with bf-p4c (\$$SDE_INSTALL/bin/bf-p4c): the Tofino tests skip"; fi
	$(MAKE) --no-print-directory lint typecheck
	$(PYTHON) -m pytest -q -rs $(PYTEST_WORKERS) --durations=30 tests

# The fast kinds of tests/ (docs/testing.md, "Tests by kind"): no live traffic, no SDE, nothing a
# folder's conftest.py marks slow; what to run before a commit
FAST_KINDS := tests/unit tests/property tests/switch tests/agent tests/docs
unit-tests: lint typecheck
	$(PYTHON) -m pytest -q -rs $(PYTEST_WORKERS) -m "not slow" $(FAST_KINDS)

# Other versions than make setup's, each in a new virtual environment under build/ (.ci/try-versions):
# the lower bounds of the dependencies (CI runs it), and the newest of everything (a report)
test-minimum:
	PYTHON=$(PYTHON) .ci/try-versions minimum

test-latest:
	PYTHON=$(PYTHON) .ci/try-versions latest

# ruff (pyproject.toml [tool.ruff]): pyflakes, pycodestyle, import order, bugbear, pyupgrade and
# simplify over the whole tree at 120 columns, and its formatter
lint:
	$(PYTHON) -m ruff check controlplane tests bench ptf-tests samples bfrt-scripts
	$(PYTHON) -m ruff format --check controlplane tests bench ptf-tests samples bfrt-scripts

# mypy (pyproject.toml [tool.mypy]): the whole package, strict on the core (labels, tables, agent, drivers, ...)
typecheck:
	$(PYTHON) -m mypy

# PTF (ptf-tests/, docs/testing.md): TARGET=model, the software switch (the default for this
# target), or TARGET=tofino-model, the SDE flow, on the model of CHIP (tofino or tofino2).
# PTF_ARGS picks tests: a module (test_parser), a test (test_ri.RriChainOfUpdates) or groups
# ('standard ^many-packets').
PTF_TARGET := $(if $(filter command line environment,$(origin TARGET)),$(TARGET),model)
PTF_ARGS ?=
ptf:
	@case "$(PTF_TARGET)" in \
	  model) ptf-tests/run/model/run $(PTF_ARGS) ;; \
	  tofino-model) CHIP=$(CHIP) ptf-tests/run/tofino-model/run $(PTF_ARGS) ;; \
	  *) echo "make ptf: TARGET=model (the software switch) or TARGET=tofino-model (with an SDE), not '$(PTF_TARGET)';" \
	       "on a hardware switch run the SDE's run_p4_tests.sh as docs/testing.md shows" >&2; exit 2 ;; \
	esac

# The PTF tests and their groups, without running them (no root needed)
ptf-list:
	@ptf --test-dir ptf-tests/tests --list

demo: installed
	$(PYTHON) -m ffs.lab.demo $(TOPO) --duration $(DURATION)

# The same main job on tofino-model + bf_switchd with ffs-agent --target tofino (root, SDE, make build)
demo-tofino-model: installed
	@[ -n "$$SDE_INSTALL" ] || { echo "make demo-tofino-model: set SDE and SDE_INSTALL (a Tofino SDE with tofino-model)" >&2; exit 2; }
	$(PYTHON) -m ffs.lab.demo_tofino --chip $(CHIP) --duration $(DURATION_MODEL)

# The differential run (docs/testing.md): ffs-agent programs tofino-model + bf_switchd from
# topologies/differential.yaml; seeded probes through the model and the software switch must agree
# (DIFFERENTIAL_ARGS: more of its options, e.g. --seed N, --json, --log-dir DIR)
PACKETS ?= 3000
DIFFERENTIAL_ARGS ?=
differential-model:
	@[ -n "$$SDE_INSTALL" ] || { echo "make differential-model: set SDE and SDE_INSTALL (a Tofino SDE with tofino-model)" >&2; exit 2; }
	$(PYTHON) -m ffs.lab.differential --chip $(CHIP) --start-sde --packets $(PACKETS) $(DIFFERENTIAL_ARGS)

# Two FFS nodes in a chain (docs/testing.md, "Two nodes in a chain"): make build, then ffs.lab.chain
# brings up topologies/chain-model.yaml (chain-model-tofino2.yaml), runs PTF across it
# (ptf-tests/chain/) and the differential across it, and takes it down
CHAIN_PACKETS ?= 400
chain-model: build
	$(PYTHON) -m ffs.lab.chain test --chip $(CHIP) --sha256 $$($(MAKE) -s p4src-sha256) --packets $(CHAIN_PACKETS)

bench-switch:
	$(PYTHON) bench/bench_switch.py

# The agent's period on bf_switchd + tofino-model (the compiled ffs, installed by make build; root):
# the time of one step -- R, drops and A counters and F for all pairs over BF-Runtime gRPC, and the
# egress push -- printed for docs/benchmarks.md, or the reason it cannot run here
bench-switchd:
	$(PYTHON) -m pytest -q -s -rs -p no:cacheprovider tests/sde/test_switchd.py -k period
bench-sim:
	$(PYTHON) bench/bench_sim.py --files 5000,30000

# Evaluation (docs/results.md): scenarios in virtual time; the live CCA experiment (root)
results:
	$(PYTHON) bench/run_scenarios.py

# The papers' own experiments beside ours (docs/results.md); virtual time, no root
greedy-node:
	$(PYTHON) bench/greedy_node.py

csfq-paper:
	$(PYTHON) bench/csfq_paper.py

# reads the compiler's figures `make p4-resources` wrote into docs/pipeline.md (no SDE needed)
resources-compared:
	$(PYTHON) bench/resources_compared.py

experiment-cca:
	$(PYTHON) bench/experiment_cca.py

experiment-endpoint:
	$(PYTHON) bench/experiment_endpoint.py

# Table III and Figures 5/6 with round-trip times: every switch port delays its frames after its queue
RTT_DELAY    ?= 10ms
CCA_DURATION ?= 15
CCA_BUFFER   ?= 65536
# the paper gives no buffer; its Fig. 9 shows RTTs up to 200 ms at 20 Mb/s, which a 64 KB queue (26 ms)
# cannot hold: 1000 frames of 1538 bytes, netem's default limit (a Mininet link with a delay)
CCA_DEEP_BUFFER ?= 1538000
CCA_DEEP_DURATION ?= 10
experiments-rtt:
	$(PYTHON) bench/experiment_cca.py --delay $(RTT_DELAY) --duration $(CCA_DURATION) --buffer $(CCA_BUFFER) --out docs/results/cca-rtt
	$(PYTHON) bench/experiment_endpoint.py --delay $(RTT_DELAY) --out docs/results/endpoint-rtt
	$(PYTHON) bench/experiment_cca.py --delay $(RTT_DELAY) --duration $(CCA_DEEP_DURATION) --buffer $(CCA_DEEP_BUFFER) --out docs/results/cca-rtt-deep
	$(PYTHON) bench/rtt_tables.py | tee docs/results/rtt-tables.md

netns-up:
	$(PYTHON) -m ffs.lab.netns up $(TOPO)

netns-down:
	$(PYTHON) -m ffs.lab.netns down $(TOPO)

# --- Tofino (SDE) -------------------------------------------------------------------------------
check-sde:
	@if [ -z "$$SDE_INSTALL" ]; then \
	  echo "make build: SDE_INSTALL is not set. Point SDE and SDE_INSTALL at an installed Tofino SDE" >&2; \
	  echo "            (open-p4studio or Intel's), e.g. export SDE=~/open-p4studio SDE_INSTALL=\$$SDE/install" >&2; \
	  exit 2; fi
	@if [ ! -x "$$SDE_INSTALL/bin/bf-p4c" ]; then \
	  echo "make build: $$SDE_INSTALL/bin/bf-p4c not found: build the SDE with the P4 compiler (p4studio) first" >&2; \
	  exit 2; fi

build: check-sde $(BUILD)/ffs/bf-p4c.log install-conf

# one chip's build as a target of its own, so that make -j builds both side by side (bf-p4c uses
# one core; make test does, each chip's output kept together by -Otarget)
build-tofino build-tofino2: build-%:
	@$(MAKE) --no-print-directory -j1 build CHIP=$*

# compile only (into BUILD=...), for tests and bench/p4_resources.py
compile: check-sde $(BUILD)/ffs/bf-p4c.log

# the FFS library composed with L2/L3/ACL forwarding, and that forwarding alone (-DNO_FFS)
example: check-sde
	@$(MAKE) --no-print-directory -j2 -Otarget example-ffs example-alone

example-ffs:
	@$(MAKE) --no-print-directory -j1 compile P4SRC=p4src/examples/l2l3_acl.p4 BUILD=build/example-ffs/$(CHIP)

example-alone:
	@$(MAKE) --no-print-directory -j1 compile P4SRC=p4src/examples/l2l3_acl.p4 P4FLAGS=-DNO_FFS BUILD=build/example-alone/$(CHIP)

# the example with FFS, installed as $(EXAMPLE_PROGRAM) (ffs stays installed as it was): its PTF
# test runs it with P4_PROGRAM=$(EXAMPLE_PROGRAM) ptf-tests/run/tofino-model/run test_host_l2
install-example: check-sde
	@$(MAKE) --no-print-directory example-ffs
	@$(MAKE) --no-print-directory install-conf BUILD=build/example-ffs/$(CHIP) P4_PROGRAM=$(EXAMPLE_PROGRAM)

# the contract's numbers for the P4 program, from their one source (tests/unit/test_constants_p4.py
# fails when the checked-in file is not this output)
constants:
	$(PYTHON) -m ffs.core.p4constants --write p4src/include/constants.p4

# the P4 objects' names and shapes for the control plane and the software switch, from the compiled
# program (make build first; tests/sde/test_p4names_bfrt.py fails when the checked-in file is not this
# output for either chip)
names:
	@test -f $(BUILD)/ffs/bf-rt.json || { echo "make names: no $(BUILD)/ffs/bf-rt.json: make build first" >&2; exit 1; }
	$(PYTHON) -m ffs.core.p4names_gen --bfrt $(BUILD)/ffs/bf-rt.json --write controlplane/ffs/core/p4names.py

p4-resources: check-sde
	$(PYTHON) bench/p4_resources.py --write docs/pipeline.md

# The compiler's output stays in $(BUILD)/ffs/bf-p4c.log (tests read its warnings), and what the
# build knows of the compiler's known defects in $(BUILD)/ffs/compiler-defects (docs/pipeline.md)
$(BUILD)/ffs/bf-p4c.log: $(P4DEPS)
	@mkdir -p $(BUILD)/ffs
	@echo "bf-p4c --std p4-16 --target $(CHIP) --arch $(P4ARCH) -g $(P4FLAGS_TARGET) $(P4FLAGS) -o $(BUILD)/ffs $(P4SRC)"
	@LD_LIBRARY_PATH="$$SDE_INSTALL/lib:$$LD_LIBRARY_PATH" "$$SDE_INSTALL/bin/bf-p4c" --std p4-16 \
	  --target $(CHIP) --arch $(P4ARCH) -g $(P4FLAGS_TARGET) $(P4FLAGS) \
	  --bf-rt-schema $(BUILD)/ffs/bf-rt.json -o $(BUILD)/ffs $(P4SRC) > $(BUILD)/ffs/bf-p4c.log.new 2>&1; \
	  rc=$$?; cat $(BUILD)/ffs/bf-p4c.log.new; [ $$rc = 0 ] || { rm -f $(BUILD)/ffs/bf-p4c.log.new; exit $$rc; }
	@mv $(BUILD)/ffs/bf-p4c.log.new $(BUILD)/ffs/bf-p4c.log
	@test -f $(BUILD)/ffs/pipe/$(BIN) || { echo "make build: bf-p4c produced no $(BIN)" >&2; exit 1; }
	@$(PYTHON) bench/p4_resources.py --defects $(BUILD)/ffs > $(BUILD)/ffs/compiler-defects
	@$(PYTHON) bench/p4_resources.py --summary $(BUILD)/ffs || true

# Installs the program where run_switchd.sh -p ffs --arch $(CHIP) looks for it, beside the other
# chip's (the driver stops on a program compiled for the other chip):
#   $$SDE_INSTALL/share/$(CHIP)pd/ffs/{bf-rt.json,pipe/context.json,pipe/$(BIN)}
#   $$SDE_INSTALL/share/p4/targets/$(CHIP)/ffs.conf
install-conf: check-sde
	@test -f $(BUILD)/ffs/bf-rt.json || { echo "install-conf: run make build first" >&2; exit 2; }
	mkdir -p "$$SDE_INSTALL/$(PD_DIR)/pipe" "$$SDE_INSTALL/share/p4/targets/$(CHIP)"
	cp $(BUILD)/ffs/bf-rt.json "$$SDE_INSTALL/$(PD_DIR)/"
	cp $(BUILD)/ffs/pipe/context.json $(BUILD)/ffs/pipe/$(BIN) "$$SDE_INSTALL/$(PD_DIR)/pipe/"
	sed -e 's/@CHIP_FAMILY@/$(CHIP)/' -e 's/@PROGRAM@/$(P4_PROGRAM)/' -e 's/@BIN_NAME@/$(BIN)/' -e 's|@PD_DIR@|$(PD_DIR)|' -e 's|@AGENT0@|$(AGENT0_LINE)|' \
	  p4src/ffs.conf.in > "$$SDE_INSTALL/share/p4/targets/$(CHIP)/$(P4_PROGRAM).conf"
	@# the sha256 of the p4src/ this program was compiled from: the tofino-model PTF runner and the
	@# switchd tests refuse an installed ffs whose hash is not the checkout's (a stale program)
	@newer=$$(find $(P4DEPS) -newer $(BUILD)/ffs/pipe/$(BIN)); [ -z "$$newer" ] || { \
	  echo "install-conf: p4src/ changed since $(BUILD)/ffs/pipe/$(BIN) was compiled ($$newer): make build" >&2; exit 2; }
	$(MAKE) -s p4src-sha256 > $(BUILD)/ffs/p4src.sha256
	cp $(BUILD)/ffs/p4src.sha256 $(BUILD)/ffs/compiler-defects "$$SDE_INSTALL/$(PD_DIR)/"
	@echo "installed: run_switchd.sh -p $(P4_PROGRAM) --arch $(CHIP)"

# One hash over every file of p4src/ (names and contents), printed: what install-conf records
p4src-sha256:
	@find p4src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1

clean-build:
	rm -rf build
