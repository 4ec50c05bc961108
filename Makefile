# TorchCTS: every target is one nox call of the same name. `make help` lists them.
PYTHON ?= python3
BOOT := .nox/bootstrap
NOX := $(BOOT)/bin/nox
LEVEL ?=
ARGS ?=
RUN_ARGS := $(if $(LEVEL),--level $(LEVEL)) $(ARGS)
RUNS := run run-cpu run-meta run-simdev run-cuda run-mps run-xpu
# what the user typed, recorded as a run's command (the pytest line is kept beside it)
$(RUNS): export TORCHCTS_USER_COMMAND = make $@$(if $(LEVEL), LEVEL=$(LEVEL))$(if $(ARGS), ARGS='$(ARGS)')

.DEFAULT_GOAL := help
.PHONY: help env run test lint bench soak report submission-archive run-cpu run-meta run-simdev run-cuda run-mps run-xpu

$(NOX):
	@$(PYTHON) -m venv $(BOOT) && $(BOOT)/bin/pip install -q --disable-pip-version-check nox

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-20s %s\n", $$1, $$2}'

run: $(NOX) ## The main job on the best device here (LEVEL=8 for release depth)
	$(NOX) -s run -- $(RUN_ARGS)

env: $(NOX) ## Build the environment bin/torchcts-* run (make run and make test do it too)
	$(NOX) -s env

test: $(NOX) ## All tests (what CI runs)
	$(NOX) -s tests

lint: $(NOX) ## ruff, mypy strict, import directions, evidence store
	$(NOX) -s lint

bench: $(NOX) ## Print the benchmark table
	$(NOX) -s bench

soak: $(NOX) ## Kill and resume simdev runs; compare with an uninterrupted run
	$(NOX) -s soak -- $(ARGS)

report: $(NOX) ## Render reports from results/
	$(NOX) -s report -- $(ARGS)

submission-archive: $(NOX) ## Zip the real run artifacts for submission
	$(NOX) -s submission-archive -- $(ARGS)

run-cpu: $(NOX) ## Validate the suite against the CPU itself
	$(NOX) -s run-cpu -- $(RUN_ARGS)

run-meta: $(NOX) ## Metadata-only run on the meta device
	$(NOX) -s run-meta -- $(RUN_ARGS)

run-simdev: $(NOX) ## Run on simdev, the pure-Python reference backend
	$(NOX) -s run-simdev -- $(RUN_ARGS)

run-cuda: $(NOX) ## Run on CUDA / ROCm
	$(NOX) -s run-cuda -- $(RUN_ARGS)

run-mps: $(NOX) ## Run on Apple MPS
	$(NOX) -s run-mps -- $(RUN_ARGS)

run-xpu: $(NOX) ## Run on Intel XPU
	$(NOX) -s run-xpu -- $(RUN_ARGS)
