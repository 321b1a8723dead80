"""Load: the product under concurrent buyers beside a like-for-like baseline on the same stack.

    python -m bench.load --db D --baseline-db B --redis-db N   # every run, 30 s measured each after 5 s of warm-up
    python -m bench.load --seconds 10 --warmup 2 --phases 0    # a short version
    python -m bench.load --no-baseline --no-hot --no-open      # the product alone, closed loop, spread
    python -m bench.load --rates 10,20,40 --open-buyers 150    # open loop at other rates
    python -m bench.load --py-spy --json /tmp/load-py-spy.json     # with a sampling profile (py-spy)
    python -m bench.load --profile --json /tmp/load-cprofile.json  # with cProfile inside the product's servers

The baseline (``bench/load/baseline``, issue 32) is the product's architecture in the least code: a
Django + DRF project with its own models, served by the same gunicorn command and settings, with a
Celery worker on Redis (queue ``releases``). It answers the product buyer's requests at the same
paths: a quote (listing and holding read, price computed); a purchase (token looked up in the
database, wallet debited with a guard, holding checked and raised, two ledger rows and a purchase
row, a task queued on commit) that waits on Redis under ``Prefer: wait``; the task locks the
listing's path row, draws numpy Laplace noise for 10 values, writes the release and wakes the
request. Nothing of the product is imported.

One invocation makes these runs, one after the other, each mode's baseline just before the product,
each from fresh databases, the servers of one run stopped before the next starts:

1. closed loop, ``spread``: ``--buyers`` buyers stepping up their levels on ``--listings`` listings
   (a quote, a purchase, waiting for the release, again);
2. closed loop, ``hot``: every buyer on one listing (``--hot-ceiling``, steps up to
   ``--hot-step-max``, so that nobody runs out during the run);
3. open loop, one run per ``--rates`` (default 20 and 40 purchases/s): Poisson arrivals, each taken
   by one of ``--open-buyers`` buyers, latency from the SCHEDULED arrival to the release in hand,
   the achieved rate and the backlog at the end of the window (``openloop``).

``--no-baseline``, ``--no-hot``, ``--no-closed`` and ``--no-open`` leave runs out. Every run reports
CPU ms per purchase by process group (web = gunicorn, worker = Celery, db = the run's PostgreSQL
backends): the figure that survives a noisy machine. It prints the runs side by side with the
targets of issue 32 (``bench.load.targets``) and writes every figure as JSON (``--json``; with the
date and machine of ``bench/stamp.py``, for ``scripts/perf_page.py``). The exit status is 1 if an
invariant fails, 2 with ``--check-target`` if a target is missed.

The modules, each doing one thing:

* ``services``: the database, Redis, gunicorn and Celery of a run (product or baseline); stops all it started;
* ``meters``: CPU per part of the setup from /proc, and what PostgreSQL's sessions wait on;
* ``client``: one buyer's keep-alive HTTP connection;
* ``buyers``: what a buyer does (quote, purchase, wait), the same against both systems, and the canary;
* ``window``: buyers through the warm-up and the measured window, with the meters;
* ``openloop``: the Poisson dispatcher, the pool of buyers taking arrivals, and the open loop's figures;
* ``runs``: one run of either system in any mode, from an empty database to its figures and invariants;
* ``seed`` (product) and ``baseline/`` (the baseline project, its seed, its invariants);
* ``figures``: counts, percentiles, CPU per purchase; ``invariants``: the product's checks in the database;
* ``targets``: ratios and the PASS / MISS verdicts; ``report``: the printed report and the JSON;
* ``phases``: one purchase timed phase by phase alone after the load (``--phases``);
* ``server_profile``, ``gunicorn_profile``, ``celery_profile``: cProfile inside the servers
  (``--profile``); ``profile_figures``: merging and naming what it found; ``pyspy``: ``--py-spy``.

Starts everything itself on this machine and stops it on exit (also on
Ctrl-C or an error): fresh PostgreSQL databases (``--db`` for the product,
``--baseline-db`` for the baseline, dropped and created again for each run;
dropped at the end unless ``--keep-db``), the product's own Redis database
(``--redis-db``, flushed before each run; the product and the baseline use
it in turn), ``manage.py migrate`` (the baseline: ``migrate --run-syncdb``),
a seed step, gunicorn with ``DJANGO_ENV=production`` (gthread workers) and a
Celery worker (prefork).

After each product run the database is checked: every transfer balances, no
wallet is negative, every balance is the sum of its legs, wallets and
earnings match the purchases, holdings stay within released <= purchased <=
ceiling and match the purchases and releases, each (path, level) was sampled
exactly once, every released purchase has exactly one release, nothing is
left in flight, and what the buyers were told (201s and 202s, quoted prices, released)
matches what is stored. The baseline's rows are checked the same way
(``baseline/invariants.py``: balanced transfers, wallets, holdings, one
release of 10 values per released purchase, nothing in flight, what the
buyers were told).

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
