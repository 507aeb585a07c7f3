# The two commands a newcomer needs: `make demo` and `make test`. Both install first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: install demo test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

demo: install
	$(BIN)/omnienv rollout wordle --policy solver --episodes 50 --split test --out demo-trajectories.jsonl

test: install
	$(BIN)/ruff check omnienv tests benchmarks examples scripts
	$(BIN)/pytest -q

lint: install
	$(BIN)/ruff check omnienv tests benchmarks examples scripts

bench: install
	$(BIN)/python benchmarks/inprocess.py

clean:
	rm -rf $(VENV) .venvs .pytest_cache demo-trajectories.jsonl
