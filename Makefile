# The two commands a newcomer needs: `make demo` and `make test`. Both install first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: install demo test lint bench clean

install: system-deps $(STAMP)

# System packages the sandboxes need, installed when missing: bubblewrap (Jupyter kernels, shells);
# python3, git, gcc, make and libc6-dev (the packages the terminal tasks' Dockerfiles name);
# Xvfb, xdotool, wmctrl, openbox, small X apps, Gnumeric and PCManFM (desktop sessions); dockerd and debootstrap
# (the image tests).
.PHONY: system-deps
system-deps:
	@command -v bwrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap; }
	@! dpkg-query -W -f='$${Status}\n' python3 git gcc make libc6-dev 2>&1 | grep -qv '^install ok installed$$' \
		|| { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 git gcc make libc6-dev; }
	@(for c in Xvfb xdotool wmctrl openbox xterm xedit xcalc xclock xwd gnumeric ssconvert pcmanfm; do command -v $$c >/dev/null 2>&1 || exit 1; done) \
		|| { apt-get update -qq && apt-get install -y -qq --no-install-recommends xvfb xdotool wmctrl openbox xterm x11-apps gnumeric pcmanfm; }
	@# Docker's daemon and debootstrap for the image tests (tests/deploy starts a private dockerd, makes a local base)
	@(command -v dockerd && command -v debootstrap) >/dev/null 2>&1 \
		|| { apt-get update -qq && apt-get install -y -qq --no-install-recommends docker.io debootstrap; }
	@# Chromium for the browser tests of the /ui pages (Playwright drives it; no browser download)
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; }

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -e '.[dev,server,llm,jupyter,desktop,ray,deploy]'
	@rm -f $(VENV)/.installed-* && touch $@

demo: install
	$(BIN)/omnienv demo

SOURCES := omnienv omnienv_verifiers tests benchmarks examples scripts

# The peers' virtualenvs (tests/peerenv.py) are built two at a time beside the lint and the first
# tests, instead of each one stalling the first test that needs it; their pip output goes to
# .venvs/prebuild.log. A test that needs one still being built waits for it. The suite runs on two
# pytest-xdist workers, a module (or a package with fixtures of its own) at a time: tests/conftest.py.
test: install
	@mkdir -p .venvs
	$(BIN)/python -m tests.peerenv > .venvs/prebuild.log 2>&1 & prebuild=$$!; \
	$(BIN)/ruff check $(SOURCES) && $(BIN)/ruff format --check $(SOURCES) && $(BIN)/mypy \
	&& $(BIN)/pytest -q --no-skips -n 2 --dist loadscope --no-loadscope-reorder --durations=25 --cov=omnienv --cov-report=term-missing:skip-covered --cov-fail-under=88; \
	status=$$?; wait $$prebuild; exit $$status

lint: install
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/mypy

bench: install
	$(BIN)/python benchmarks/inprocess.py

# Wordle over /ws against OpenEnv 0.10.0 and a bare echo server; 10,000 idle sessions and start-up.
.PHONY: bench-server
bench-server: install
	$(BIN)/python benchmarks/ws_throughput.py
	$(BIN)/python benchmarks/sessions.py

# Desktop screenshot tool and pool reset against raw X captures of the same display.
.PHONY: bench-desktop
bench-desktop: install
	$(BIN)/python benchmarks/desktop.py

# Start-up to healthy with the /ui pages on vs --no-ui (target: within 10%).
.PHONY: bench-ui
bench-ui: install
	$(BIN)/python benchmarks/ui_startup.py

# A tiny model learns the Doors environment with TRL's GRPOTrainer on the CPU, in-process and against
# `omnienv serve` (docs/trl.md): prints the first and last mean rewards and the reward curve's path.
.PHONY: train-demo
train-demo: install
	$(BIN)/python -c "from tests.peerenv import peer_python; peer_python('trl')"
	OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 .venvs/trl/bin/python examples/train_demo.py

clean:
	rm -rf $(VENV) .venvs .pytest_cache demo-trajectories.jsonl
