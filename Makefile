# make test: create .venv, install everything (Python and Debian packages), lint, type-check, test.
# make demo: install and run the main job.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEBS := prometheus prometheus-alertmanager chromium victoria-metrics

.PHONY: test demo install debs lint typecheck pytest bench clean proto mutate bugs

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,probe-torch]'
	touch $(STAMP)

install: $(STAMP)

debs:
	@missing=""; for p in promtool amtool chromium victoria-metrics vmalert; do command -v $$p >/dev/null 2>&1 || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBS); \
	fi

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy --strict src/

pytest: $(STAMP) debs
	$(BIN)/pytest -q -n 2 --dist loadfile

test: lint typecheck pytest

demo: $(STAMP)
	$(BIN)/suanli demo

bench: $(STAMP) debs
	$(BIN)/python bench/run.py

# Mutation testing (slow: hours on 2 cores; not part of `make test`). MODULES=intervals xid ... limits it.
mutate: $(STAMP)
	$(BIN)/pip install -q cosmic-ray==8.7.0
	$(BIN)/python bench/mutation/mutate.py $(MODULES)

# Issue 20's nine bugs, reapplied one at a time: each must fail its tests.
bugs: $(STAMP)
	$(BIN)/python bench/mutation/bugs.py

proto: $(STAMP)
	$(BIN)/python proto/generate.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
