# Every package is tested in an environment of its own (.venvs/<name>), holding that package,
# its framework at the pinned release, and the dev tools: crewai and openai-agents cannot share one.
PY ?= python3
UV := $(PY) -m uv
export UV_PREVIEW_FEATURES := package-conflicts

PACKAGES := core langgraph openai claude crewai server
dist_core := convostore
dist_langgraph := convostore-langgraph
dist_openai := convostore-openai
dist_claude := convostore-claude
dist_crewai := convostore-crewai
dist_server := convostore-server
src_core := packages/core/src
src_langgraph := packages/langgraph-adapter/src
src_openai := packages/openai-session/src
src_claude := packages/claude-session/src
src_crewai := packages/crewai-glue/src
src_server := packages/server/src
# Workspace packages an environment holds besides its own, at the lock's versions: the server's
# tests drive its /v1 Conversations API with the official `openai` client and read it back
# through convostore-openai's session. (Not a test group of the server: convostore-openai is
# declared conflicting with convostore-crewai, so uv installs it only as a selected package.)
also_server := convostore-openai


.PHONY: wrk uv services browser test-web install install-tools install-ts test-ts bench-ts demo test lint typecheck bench bench-memory bench-cli bench-search bench-openai-v1 bench-replicas bench-telemetry bench-scale $(addprefix bench-,core langgraph openai claude crewai server) dist test-dist test-docs docs install-docs example $(addprefix install-,$(PACKAGES)) $(addprefix test-,$(PACKAGES)) $(addprefix typecheck-,$(PACKAGES))

install: $(addprefix install-,$(PACKAGES)) install-tools install-ts

uv:
	@$(UV) --version >/dev/null 2>&1 || $(PY) -m pip install -q "uv==0.13.9"

# SKIP_INSTALL=1 (set by `make test` for its suites, after it installed everything once) keeps
# two suites running side by side from syncing one environment at the same time.
$(addprefix install-,$(PACKAGES)): install-%: uv
	@[ -n "$(SKIP_INSTALL)" ] || echo "==> .venvs/$*: $(dist_$*) with its dependencies and the dev tools (first run: minutes)"
	@[ -n "$(SKIP_INSTALL)" ] || UV_PROJECT_ENVIRONMENT=.venvs/$* $(UV) sync -q --package $(dist_$*) --group dev --group test
	@[ -n "$(SKIP_INSTALL)" ] || [ -z "$(also_$*)" ] || UV_PROJECT_ENVIRONMENT=.venvs/$* $(UV) sync -q --inexact --no-dev $(addprefix --package ,$(also_$*))

# .venvs/tools: the convostore and convostore-server commands with every adapter that keeps
# tables of its own (LangGraph, CrewAI, Claude), so that `convostore migrate`, `check` and `stats`
# read every component a database may hold. convostore-openai cannot join it (crewai pins
# openai<3): its `import-from openai-sqlite` runs from .venvs/openai.
TOOLS := convostore convostore-langgraph convostore-crewai convostore-claude convostore-server
install-tools: uv
	@echo "==> .venvs/tools: the convostore commands with the langgraph, crewai and claude adapters and the server"
	@UV_PROJECT_ENVIRONMENT=.venvs/tools $(UV) sync -q --no-dev $(addprefix --package ,$(TOOLS)) --extra cli --extra postgres

demo: install-core
	.venvs/core/bin/python examples/quickstart.py

# make example NAME=langgraph_quickstart: an example in the environment of its package
example_venv = $(or $(filter $(firstword $(subst _, ,$(NAME))),langgraph openai claude crewai server),core)
example:
	@[ -n "$(NAME)" ] || { echo "usage: make example NAME=<a file in examples/, without .py>"; exit 2; }
	@$(MAKE) -s install-$(example_venv)
	.venvs/$(example_venv)/bin/python examples/$(NAME).py

# Every package's sdist and wheel, for installing one adapter before they are published:
# pip install --find-links dist convostore-langgraph
dist: uv install-ts
	@echo "==> dist/: every package's sdist and wheel, and the TypeScript client's npm tarball"
	@rm -rf dist && $(UV) build -q --all-packages -o dist
	@# built and packed in a copy: the client's tests (make test runs two suites at once) read its dist/
	@copy=$$(mktemp -d) && cp -r packages/client-ts/package.json packages/client-ts/README.md \
		packages/client-ts/tsconfig.json packages/client-ts/src $$copy/ \
		&& packages/client-ts/node_modules/.bin/tsc -p $$copy/tsconfig.json \
		&& (cd $$copy && npm pack --silent --pack-destination $(CURDIR)/dist >/dev/null) && rm -rf $$copy

test-dist: install-core dist
	@echo "==> each adapter installed alone from dist/ into an empty environment, its example run"
	@UV="$(UV)" .venvs/core/bin/pytest tests/dist -q -p no:cacheprovider

lint: install-core
	@echo "==> ruff"
	.venvs/core/bin/ruff check .
	.venvs/core/bin/ruff format --check .

$(addprefix typecheck-,$(PACKAGES)): typecheck-%: install-%
	@echo "==> mypy --strict $(src_$*)"
	@[ -z "$$(ls $(src_$*)/*/*.py 2>/dev/null | grep -v __init__)" ] || .venvs/$*/bin/mypy --strict $(src_$*)

typecheck: $(addprefix typecheck-,$(PACKAGES))

# The tests need PostgreSQL on 127.0.0.1:5432 (user postgres, database test). Start a local
# Debian cluster if one is installed but stopped; elsewhere the PostgreSQL cases say how to start it.
services:
	@command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p 5432 \
		&& command -v pg_ctlcluster >/dev/null 2>&1 \
		&& pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql | head -1) main start || true

# Debian's chromium for the web view's browser tests (tests/web drives it with Playwright, which
# cannot download a browser build here): installed with apt-get when /usr/bin/chromium is missing.
browser:
	@[ -x /usr/bin/chromium ] || { \
		command -v apt-get >/dev/null 2>&1 || { echo "make browser: /usr/bin/chromium is missing and apt-get is not available: install Debian's chromium package (or a Chromium at /usr/bin/chromium) to run tests/web"; exit 1; }; \
		echo "==> apt-get install chromium (Debian's package, for tests/web)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null || { echo "make browser: apt-get install chromium failed (it needs root)"; exit 1; }; \
	}
	@/usr/bin/chromium --version

# wrk, the load generator of benchmarks/server_bench.py (without it the benchmark drives the
# load from its own Python process, which then competes with the servers for the 2 cores):
# installed with apt-get when missing, else the benchmark says it fell back.
wrk:
	@command -v wrk >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 || { echo "make wrk: wrk is missing and apt-get is not available: benchmarks/server_bench.py drives the load itself"; exit 0; }; \
		echo "==> apt-get install wrk (Debian's package, for benchmarks/server_bench.py)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends wrk >/dev/null || echo "make wrk: apt-get install wrk failed (it needs root): benchmarks/server_bench.py drives the load itself"; \
	}

# The web view in a real browser (Debian's chromium, Playwright) against the real server.
test-web: install-server install-ts services browser
	@echo "==> tests/web in .venvs/server (chromium $$(/usr/bin/chromium --version | cut -d' ' -f2))"
	@.venvs/server/bin/pytest tests/web -q -p no:cacheprovider

# packages/client-ts, the TypeScript client (@convostore/client): Node 18+ and npm, its one dev
# dependency (typescript) pinned in package-lock.json. Its tests (node's own runner) build it
# with tsc --strict and drive a real convostore-server from .venvs/server on SQLite.
install-ts:
	@[ -n "$(SKIP_INSTALL)" ] || { command -v npm >/dev/null 2>&1 || { echo "make install-ts: npm is missing: install Node.js 18 or later (with npm)"; exit 1; }; }
	@[ -n "$(SKIP_INSTALL)" ] || echo "==> packages/client-ts: npm ci"
	@[ -n "$(SKIP_INSTALL)" ] || (cd packages/client-ts && npm ci --no-audit --no-fund --loglevel=error)

test-ts: install-ts install-server
	@echo "==> packages/client-ts: tsc --strict, then node --test against convostore-server"
	@cd packages/client-ts && npm test --silent

# The convostore command (core distribution) is tested with the core: tests/cli; and read
# replicas (tests/replicas: a primary and a hot standby of their own, tests/pg_cluster.py).
tests_core := tests/core tests/cli tests/replicas

$(addprefix test-,$(PACKAGES)): test-%: install-% services
	@echo "==> $(or $(tests_$*),tests/$*) in .venvs/$*"
	@if [ -d tests/$* ]; then .venvs/$*/bin/pytest $(or $(tests_$*),tests/$*) -q -p no:cacheprovider; fi

# tests/openai/test_over_http.py reads a Runner session over HTTP from the server's own environment.
test-openai: install-server

# The documentation site in site/ (MkDocs strict: a broken link or reference fails the build).
install-docs: uv
	@echo "==> .venvs/docs: MkDocs, Material and mkdocstrings (the docs dependency group)"
	@UV_PROJECT_ENVIRONMENT=.venvs/docs $(UV) sync -q --only-group docs

docs: install-docs
	@echo "==> mkdocs build --strict -> site/"
	@NO_MKDOCS_2_WARNING=1 .venvs/docs/bin/mkdocs build --strict --quiet

# Every README's ```python blocks, each run in its package's environment (tests/docs).
test-docs: install services
	@echo "==> tests/docs: every README code block runs as pasted, or is an excerpt of examples/"
	@.venvs/core/bin/pytest tests/docs -q -p no:cacheprovider

# Every check reports, even when another fails: the environments are built first (nothing runs
# without them), then lint, the type checks and the suites run two at a time (they wait on
# PostgreSQL, subprocesses and the browser as much as on the 2 cores), each in a sub-make whose
# verdict is kept in .verdicts/. Each one's output is printed whole when it ends (GNU make's
# --output-sync); a table of every verdict ends the run, whose status fails if any failed.
SUITES := $(addprefix test-,$(PACKAGES)) test-ts test-web test-docs docs test-dist
CHECKS := lint typecheck $(SUITES)
.PHONY: $(addprefix verdict-,$(CHECKS))
test: install services
	@rm -rf .verdicts && mkdir .verdicts
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(addprefix verdict-,$(CHECKS)); \
	echo "==> verdicts"; failed=0; \
	for check in $(CHECKS); do \
		verdict=$$(cat .verdicts/$$check 2>/dev/null || echo "did not run"); \
		printf '    %-16s %s\n' "$$check" "$$verdict"; \
		[ "$$verdict" = passed ] || failed=1; \
	done; \
	exit $$failed

$(addprefix verdict-,$(CHECKS)): verdict-%:
	@if $(MAKE) --no-print-directory SKIP_INSTALL=1 $*; then echo passed > .verdicts/$*; \
	else echo FAILED > .verdicts/$*; fi

# Every benchmark once (about 10 minutes on 2 cores, and half an hour more for bench-search;
# PostgreSQL needed): each writes its tables,
# with the date, the machine and the command, to benchmarks/results/<package>.md, and the READMEs'
# quotes of those files are refreshed. `make bench-core` (or -langgraph, ...) runs one.
BENCHES := core langgraph openai claude crewai server
bench-server: wrk
$(addprefix bench-,$(BENCHES)): bench-%: install-% services
	@echo "==> benchmarks/$*_bench.py in .venvs/$* -> benchmarks/results/$*.md"
	.venvs/$*/bin/python benchmarks/$*_bench.py --markdown benchmarks/results/$*.md
	@.venvs/core/bin/python benchmarks/report.py

# The TypeScript client against a bare fetch of the same endpoints, from Node.
bench-ts: install-ts install-server
	@echo "==> benchmarks/client_ts_bench.py (Node) -> benchmarks/results/client_ts.md"
	@cd packages/client-ts && npm run build --silent
	.venvs/server/bin/python benchmarks/client_ts_bench.py --markdown benchmarks/results/client_ts.md
	@.venvs/core/bin/python benchmarks/report.py

# Memory stores against the LangGraph store on the same database: in the LangGraph environment.
bench-memory: install-langgraph services
	@echo "==> benchmarks/memory_bench.py in .venvs/langgraph -> benchmarks/results/memory.md"
	.venvs/langgraph/bin/python benchmarks/memory_bench.py --markdown benchmarks/results/memory.md
	@.venvs/core/bin/python benchmarks/report.py

# The command line on a 1,000,000-message store (about 5 minutes).
bench-cli: install-core services
	@echo "==> benchmarks/cli_bench.py in .venvs/core -> benchmarks/results/cli.md"
	.venvs/core/bin/python benchmarks/cli_bench.py --markdown benchmarks/results/cli.md
	@.venvs/core/bin/python benchmarks/report.py

# Full-text search on a 1,000,000-message store, SQLite and PostgreSQL (about half an hour).
bench-search: install-core services
	@echo "==> benchmarks/search_bench.py and search_append_bench.py in .venvs/core -> benchmarks/results/search*.md"
	.venvs/core/bin/python benchmarks/search_bench.py --markdown benchmarks/results/search.md
	.venvs/core/bin/python benchmarks/search_append_bench.py --markdown benchmarks/results/search_append.md
	@.venvs/core/bin/python benchmarks/report.py

# The OpenAI Conversations API (/v1) against the server's own endpoints, with the openai client.
bench-openai-v1: install-server services
	@echo "==> benchmarks/openai_v1_bench.py in .venvs/server -> benchmarks/results/openai_v1.md"
	.venvs/server/bin/python benchmarks/openai_v1_bench.py --markdown benchmarks/results/openai_v1.md
	@.venvs/core/bin/python benchmarks/report.py

# Reads through a store with a read replica on a primary and hot standby of its own
# (tests/pg_cluster.py: needs Debian's PostgreSQL binaries and root or the postgres user).
bench-replicas: install-core
	@echo "==> benchmarks/replicas_bench.py in .venvs/core -> benchmarks/results/replicas.md"
	.venvs/core/bin/python benchmarks/replicas_bench.py --markdown benchmarks/results/replicas.md
	@.venvs/core/bin/python benchmarks/report.py

# What OpenTelemetry costs a store call (about a minute).
bench-telemetry: install-core
	@echo "==> benchmarks/telemetry_bench.py in .venvs/core -> benchmarks/results/telemetry.md"
	.venvs/core/bin/python benchmarks/telemetry_bench.py --markdown benchmarks/results/telemetry.md
	@.venvs/core/bin/python benchmarks/report.py

# The store at 10,000,000 messages (100,000 conversations) against 10,000, both backends, bulk
# loaded; in the LangGraph environment for its step. Hours on 2 cores, about 30 GB of disk while
# it runs (dropped afterwards): not part of `make bench`. SIZE=100k for a quick run.
bench-scale: install-langgraph services
	@echo "==> benchmarks/scale_bench.py in .venvs/langgraph -> benchmarks/results/scale.md"
	.venvs/langgraph/bin/python benchmarks/scale_bench.py --markdown benchmarks/results/scale.md $(if $(SIZE),--size $(SIZE))
	@.venvs/core/bin/python benchmarks/report.py

bench: $(addprefix bench-,$(BENCHES)) bench-memory bench-cli bench-search bench-openai-v1 bench-ts bench-replicas bench-telemetry
