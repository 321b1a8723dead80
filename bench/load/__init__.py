"""Load: the product under concurrent buyers beside a minimal baseline on the same stack.

    python -m bench.load                                  # 50 buyers, 30 s measured per run (after 5 s of warm-up)
    python -m bench.load --no-baseline --no-hot           # the product alone, buyers spread over the listings
    python -m bench.load --buyers 100 --seconds 60 --listings 5 --workers 2 --threads 4 --celery 2
    python -m bench.load --py-spy --json /tmp/load-py-spy.json     # with a sampling profile (py-spy)
    python -m bench.load --profile --json /tmp/load-cprofile.json  # with cProfile inside the product's servers

One invocation makes four runs, one after the other, each with the same
buyers, warm-up and measured seconds; the servers of one run are stopped
before the next starts:

1. baseline, spread: a minimal Django + DRF project (``bench/load/baseline``)
   served by the same gunicorn command as the product: one POST endpoint that
   authenticates a token from the database, locks a budget row, debits it,
   writes two ledger rows and a release row holding a Laplace sample, in one
   transaction. Each buyer debits one of ``--listings`` budget rows.
2. baseline, hot: every buyer on the same budget row.
3. product, spread: the marketplace, buyers stepping up their levels on
   ``--listings`` listings (a quote, a purchase, then waiting for the release).
4. product, hot: every buyer on one listing (``--hot-ceiling``, steps up to
   ``--hot-step-max``, so that nobody runs out during the run).

``--no-baseline`` and ``--no-hot`` leave runs out. It prints the runs side by
side (rates, latencies, ratio product / baseline) with the targets of issue
14 (``bench.load.targets``), and writes every figure as JSON (``--json``).
The exit status is 1 if an invariant fails, 2 with ``--check-target`` if a
target is missed.

The modules, each doing one thing:

* ``services``: the database, Redis, gunicorn and Celery of a run; stops all it started;
* ``meters``: CPU per part of the setup from /proc, and what PostgreSQL's sessions wait on;
* ``client``: one buyer's keep-alive HTTP connection;
* ``buyers``: what a buyer does (product: quote, purchase, wait; baseline: debit), and the canary;
* ``window``: buyers through the warm-up and the measured window, with the meters;
* ``product_run`` / ``baseline_run``: one run of each, from an empty database to its figures;
* ``seed`` (product) and ``baseline/`` (the baseline project and its seed);
* ``figures``: counts and percentiles; ``invariants``: the product's checks in the database;
* ``targets``: ratios and the PASS / MISS verdicts; ``report``: the printed report and the JSON;
* ``phases``: one purchase timed phase by phase alone after the load (``--phases``);
* ``server_profile``, ``gunicorn_profile``, ``celery_profile``: cProfile inside the servers
  (``--profile``); ``profile_figures``: merging and naming what it found; ``pyspy``: ``--py-spy``.

Starts everything itself on this machine and stops it on exit (also on
Ctrl-C or an error): fresh PostgreSQL databases (``--db`` for the product,
``--baseline-db`` for the baseline, dropped and created again for each run;
dropped at the end unless ``--keep-db``), the product's own Redis database
(``--redis-db``, flushed), ``manage.py migrate``, a seed step through the
product's services, gunicorn with ``DJANGO_ENV=production`` (gthread
workers) and a Celery worker (prefork).

After each product run the database is checked: every transfer balances, no
wallet is negative, every balance is the sum of its legs, wallets and
earnings match the purchases, holdings stay within released <= purchased <=
ceiling and match the purchases and releases, each (path, level) was sampled
exactly once, every released purchase has exactly one release, nothing is
left in flight, and what the buyers were told (201s and 202s, quoted prices, released)
matches what is stored. The baseline's rows are checked the same way (each
debit balanced, budgets equal to their debits, every answered request stored).

Where the product's time goes, three ways:

* ``--phases N`` (default 150): after the spread run, with the servers
  stopped, N purchases on the loaded database are timed phase by phase alone
  in one thread (``bench/load/phases.py``), and from them the rate two cores
  could sustain.
* ``--py-spy [PATH]``: py-spy samples gunicorn and Celery (with children)
  during the measured windows (py-spy is not a dependency: give its path, or
  have it on PATH or in .venv/bin). Its shares of on-CPU samples are turned
  into CPU ms per purchase with the CPU measured in /proc.
* ``--profile``: cProfile inside every gunicorn worker thread and Celery pool
  process during the measured windows (``bench/load/server_profile.py``), with
  SQL statements and CPU per endpoint. Its overhead is large: compare
  throughput without it.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
#: the project's virtualenv (scripts/test.sh makes it), else the interpreter running this (a git worktree)
PYTHON = ROOT / ".venv" / "bin" / "python"
if not PYTHON.exists():
    PYTHON = Path(sys.executable)
VENV_BIN = PYTHON.parent
