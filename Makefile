# Two commands do all the set-up on a fresh Debian/Ubuntu machine:
#   make book   build the executed book into _build/html (the main job)
#   make test   run the fast test suite
# Both create or refresh .venv from requirements.txt and fetch the data.
# Optional extra: `make horovod` builds Horovod into .venv (the engines
# chapter then measures it too); `make test-horovod` tests the worker on it.
# `make test-notebooks` runs every chapter's plain notebook in a student's
# environment (.venv-plain: pip install ".[cpu,notebook,d2l]", no book tools),
# and the two-framework chapters' PyTorch notebooks in one without MXNet
# (.venv-torch: pip install ".[torch,notebook]"; `make test-notebooks-torch`).
# `make test-numpy126` runs the fast suite once more beside numpy 1.26.4
# and without d2l (.venv-np126), as Python 3.12 would install d2lpar.
VENV ?= .venv
PLAIN ?= .venv-plain
NP126 ?= .venv-np126
TORCHNB ?= .venv-torch
PY := $(VENV)/bin/python
STAMP := $(VENV)/.d2lpar-installed

.PHONY: setup data test lint test-slow test-notebooks test-notebooks-torch \
	book horovod test-horovod test-numpy126 clean

$(STAMP): requirements.txt pyproject.toml scripts/setup-venv.sh
	scripts/setup-venv.sh $(VENV)
	touch $@

setup: $(STAMP)

data:
	scripts/get-data.sh

test: setup data
	$(PY) -m pytest

# ruff: lint and format, configured in pyproject.toml.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Chapter execution and the browser check of the built book (run after
# `make book`, which the browser check reads).
test-slow: setup
	scripts/get-data.sh --required
	scripts/get-chromium.sh
	$(PY) -m pytest -m slow

# The chapter notebooks (as served with the book) executed top to bottom
# with nbclient in $(PLAIN), in quick mode (a few minutes).
test-notebooks: setup
	scripts/get-data.sh --required
	scripts/setup-venv.sh --plain $(PLAIN)
	D2LPAR_PLAIN_VENV=$(PLAIN) $(PY) -m pytest -m notebooks \
		tests/test_install_notebooks.py tests/test_served_wheel.py
	$(MAKE) test-notebooks-torch

# The PyTorch notebooks (NAME-pytorch.ipynb) of the chapters with PyTorch
# cells, executed in quick mode in $(TORCHNB): a student's venv without
# MXNet, pip install ".[torch,notebook]" (torch's CPU wheel from pip's
# configured wheel folder, offline, as for .venv).
test-notebooks-torch: setup
	scripts/get-data.sh --required
	test -x $(TORCHNB)/bin/python || $(PY) -m venv $(TORCHNB)
	$(TORCHNB)/bin/python -m pip install --quiet ".[torch,notebook]"
	$(TORCHNB)/bin/python -m pip install --quiet --no-deps --force-reinstall .
	rm -rf build
	D2LPAR_TORCH_VENV=$(TORCHNB) $(PY) -m pytest -m notebooks \
		tests/test_pages_tabs.py

# The fast suite beside numpy 1.26.4 (the oldest numpy with wheels for
# Python 3.12, which is not on these machines: this venv is its proxy) and
# without d2l, whose pins refuse numpy 1.26. Skipped: the tests marked
# d2l (they need d2l itself) or pinned (they check the pinned stack).
test-numpy126: data
	scripts/setup-venv.sh --numpy126 $(NP126)
	$(NP126)/bin/python -m pytest -p no:cacheprovider \
		-m 'not slow and not horovod and not notebooks and not d2l and not pinned'

# The executed book in _build/html; D2LPAR_QUICK=1 for a quick build.
book: setup
	scripts/get-data.sh --required
	scripts/build-book.sh $(VENV)

# Horovod 0.28.1 built against the venv's MXNet (about 2 minutes).
horovod: setup
	scripts/setup-horovod.sh $(VENV)

test-horovod: horovod
	scripts/get-data.sh --required
	$(PY) -m pytest -m horovod

clean:
	rm -rf _build .mathjax $(PLAIN) $(NP126) $(TORCHNB)
