# Two commands do all the set-up on a fresh Debian/Ubuntu machine:
#   make book   build the executed book into _build/html (the main job)
#   make test   run the fast test suite
# Both create or refresh .venv from requirements.txt and fetch the data.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.d2lpar-installed

.PHONY: setup data test test-slow book clean

$(STAMP): requirements.txt pyproject.toml scripts/setup-venv.sh
	scripts/setup-venv.sh $(VENV)
	touch $@

setup: $(STAMP)

data:
	scripts/get-data.sh

test: setup data
	$(PY) -m pytest

test-slow: setup
	scripts/get-data.sh --required
	$(PY) -m pytest -m slow

# Until the chapters exist, the "book" is the 1-vs-2-device comparison.
book: setup
	scripts/get-data.sh --required
	$(PY) -m d2lpar train --devices 1 --epochs $${EPOCHS:-10}
	$(PY) -m d2lpar train --devices 2 --epochs $${EPOCHS:-10}

clean:
	rm -rf _build
