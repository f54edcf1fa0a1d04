# Orchestra Studio. Two commands on a fresh machine:
#   make up     run the studio (embedded PostgreSQL and Redis unless DATABASE_URL / REDIS_URL are set)
#   make test   ruff, mypy, ESLint, Prettier, tsc, Vitest and pytest, on real PostgreSQL and Redis (embedded ones when unset)

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)

.PHONY: up test lint typecheck pytest install clean-data help frontend frontend-lint frontend-format frontend-test chromium phoenix api-types reliability

help:
	@echo "make up      run the studio at http://127.0.0.1:8000/ (Ctrl-C stops it; data stays in .data/)"
	@echo "make test    ruff, mypy, ESLint, Prettier, tsc, Vitest and pytest on real PostgreSQL and Redis"
	@echo "make lint / typecheck / frontend-lint / frontend-test / pytest   one part of make test"
	@echo "make frontend-format   rewrite frontend/ in Prettier's style"
	@echo "make frontend   build the browser studio (frontend/dist) when its sources changed"
	@echo "make api-types  regenerate frontend/src/api/openapi.json and schema.d.ts after an API change"
	@echo "make reliability  the long hardening benches: crashes, restarts, provider faults, fuzzing, load, soak (~45 min)"

# llama-cpp-python (the local model) builds from its sdist: for any x86-64-v3 CPU, not only this
# one (a native build used instructions, AMX, that a sandboxed CPU may refuse: SIGILL).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -r requirements-dev.txt
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

# The browser studio: npm ci when the lock changes, a Vite build when a source is newer than the build.
FRONTEND_SRC := $(shell find frontend/src frontend/index.html frontend/vite.config.ts frontend/tsconfig.json -type f 2>/dev/null)
NODE_STAMP := frontend/node_modules/.installed

$(NODE_STAMP): frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

frontend/dist/index.html: $(NODE_STAMP) $(FRONTEND_SRC)
	cd frontend && npm run build

frontend: frontend/dist/index.html

# ESLint (typescript-eslint with types, react-hooks, jsx-a11y; warnings fail) and Prettier's check.
frontend-lint: $(NODE_STAMP)
	cd frontend && npx eslint --max-warnings 0 . && npx prettier --check .

frontend-format: $(NODE_STAMP)
	cd frontend && npx prettier --write .

# Vitest for the components, and tsc against the types generated from the API's schema.
frontend-test: $(NODE_STAMP)
	cd frontend && npx tsc --noEmit && npx vitest run

# The API's schema and the WebSocket messages' schemas, and the types generated from each.
api-types: $(STAMP) $(NODE_STAMP)
	$(BIN)/python manage.py export_openapi_schema --api studio.api.api --output frontend/src/api/openapi.json --indent 1 --sorted
	$(BIN)/python manage.py export_event_schema --output frontend/src/api/messages.json
	cd frontend && npx openapi-typescript src/api/openapi.json -o src/api/schema.d.ts
	cd frontend && npx openapi-typescript src/api/messages.json -o src/api/messages.d.ts

# The browser tests drive Debian's Chromium, and the load-balanced WebSocket test and
# bench/cluster.py Debian's HAProxy; install them where we may (root with apt), else say how.
chromium:
	@{ command -v chromium && PATH="$$PATH:/usr/sbin" command -v haproxy; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's chromium and haproxy for the browser and load-balancer tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium haproxy >/dev/null; \
	  else echo "The browser and load-balancer tests need Debian's chromium and haproxy: sudo apt-get install -y chromium haproxy" >&2; exit 1; fi; }

# Phoenix (arize-phoenix), the OpenTelemetry receiver tests/integration/test_tracing.py starts:
# a virtual environment of its own, so that its many dependencies never move the studio's pins.
PHOENIX := .venv-phoenix/bin/phoenix

$(PHOENIX):
	@test -x .venv-phoenix/bin/python || $(PYTHON) -m venv .venv-phoenix
	.venv-phoenix/bin/python -m pip install --quiet arize-phoenix==20.26.1

phoenix: $(PHOENIX)

up: $(STAMP) frontend
	$(BIN)/python manage.py up

test: lint typecheck frontend-lint frontend-test pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy .

# studio.embedded starts PostgreSQL / Redis only for whichever of DATABASE_URL / REDIS_URL is unset.
pytest: $(STAMP) frontend chromium phoenix
	$(BIN)/python -m studio.embedded --data-dir .data/test -- $(BIN)/python -m pytest $(PYTEST_ARGS)

# The long hardening suites (issue 8); each prints its figures and goals. Their fast
# counterparts (tests/hardening/) run in make test.
RELIABILITY := bench/crash.py bench/restarts.py bench/faults.py bench/fuzz_api.py bench/load.py bench/soak.py

reliability: $(STAMP)
	@set -e; for bench in $(RELIABILITY); do echo "== $$bench"; $(BIN)/python $$bench; done

clean-data:
	rm -rf .data
