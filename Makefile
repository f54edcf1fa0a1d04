# Orchestra Studio. Two commands on a fresh machine:
#   make up     run the studio (embedded PostgreSQL and Redis unless DATABASE_URL / REDIS_URL are set)
#   make test   ruff, mypy and pytest, on real PostgreSQL and Redis (embedded ones when unset)

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)

.PHONY: up test lint typecheck pytest install clean-data help

help:
	@echo "make up      run the studio at http://127.0.0.1:8000/ (Ctrl-C stops it; data stays in .data/)"
	@echo "make test    ruff, mypy and pytest on real PostgreSQL and Redis"
	@echo "make lint / typecheck / pytest   one part of make test"

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

up: $(STAMP)
	$(BIN)/python manage.py up

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy .

# studio.embedded starts PostgreSQL / Redis only for whichever of DATABASE_URL / REDIS_URL is unset.
pytest: $(STAMP)
	$(BIN)/python -m studio.embedded --data-dir .data/test -- $(BIN)/python -m pytest $(PYTEST_ARGS)

clean-data:
	rm -rf .data
