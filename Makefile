# The two set-up commands of the README: `make demo` and `make test`. Both create .venv and install.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo test test-load docs lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The main job on the bundled samples. Findings exit 1 by design; only 2+ (unreadable input) fails.
# 1. the real 2-rank hang sample's logs; 2. the same fault reproduced live (rank 1 stops at step 4)
#    and named by the supervisor, which stops the job instead of waiting for the collective timeout;
# 3. the closing report of that run; 4. a generated 8-rank profile.
DEMO_RUN := msdoctor-runs/demo
demo: install
	$(VENV)/bin/msdoctor logs samples/logs/hang; test $$? -le 1
	rm -rf $(DEMO_RUN)
	$(VENV)/bin/msdoctor train --workers 2 --steps 8 --stop-on-hang --inject hang:rank=1,step=4 --run-dir $(DEMO_RUN); test $$? -le 1
	$(VENV)/bin/msdoctor report $(DEMO_RUN); test $$? -le 1
	$(VENV)/bin/msdoctor analyze samples/profiles/gen_8rank; test $$? -le 1

# Three workers on two cores: every test marked e2e (a real msrun job) stays on one worker, one job at a time
# (tests/conftest.py); those 35 tests take ~12 min and mostly wait on their ranks' time-outs, so the other two
# workers split the ~20 CPU-minutes of the rest over both cores beside them (measured 2026-12-03: with two workers
# the e2e worker bounded the run at 17.5 min). `make test-load` shows the e2e margins hold with two busy cores.
test: install
	$(PY) -m pytest -q -n 3 --dist loadgroup --durations=25

# The whole suite with two CPU hogs beside it (niceness 0, as busy as the tests), as on a shared CI
# machine: no test may assume an idle host. The hogs are killed however pytest ends; its exit status
# is the target's. TESTS narrows the run (e.g. make test-load TESTS=tests/e2e).
TESTS ?=
test-load: install
	$(PY) -c 'while True: pass' & h1=$$!; $(PY) -c 'while True: pass' & h2=$$!; \
	trap 'kill $$h1 $$h2 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	$(PY) -m pytest -q -p no:cacheprovider --durations=15 $(TESTS)

# Every generated file, after a rule or a corpus case changes (the suite fails while one is stale):
# docs/rules.md, the facts schema and the wording model.
docs: install
	$(PY) -m msdoctor.docsgen docs/rules.md
	$(PY) -m msdoctor.schemagen --write
	$(PY) -m msdoctor.wordinggen

# Every benchmark, each side by side with its reference; each rewrites its section of bench/RESULTS.md.
# Long (tens of minutes: the analyze benchmark generates ~1 GB profile trees and scales to 64 ranks).
bench: install
	$(PY) bench/bench_preflight.py
	$(PY) bench/bench_logs.py
	$(PY) bench/bench_analyze.py
	nice -n 10 $(PY) bench/bench_watch.py --write
	$(PY) bench/bench_trainer.py --write

lint: install
	$(VENV)/bin/ruff check msdoctor tests trainer bench samples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
