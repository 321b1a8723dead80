#!/usr/bin/env bash
# Runs the benches that finish in a few minutes, each writing its JSON (with its date and machine)
# into docs/perf/, then regenerates docs/performance.md from them. The database benches use
# DATABASE_URL (PostgreSQL) and make their own throw-away databases.
#   bash scripts/perf_run.sh [bench ...]     # default: all of them below
set -uo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
out=docs/perf
mkdir -p "$out"
all=(engine lattice microdata shuffle lattice_release plan_reads scale microdata_release ingest listing_scale)
[ $# -gt 0 ] && all=("$@")
status=0
for b in "${all[@]}"; do
  case $b in
    scale) args=(--buyers 1000) ;;
    ingest) args=(--rows 1000000) ;;
    listing_scale) args=(--rows 1000000) ;;
    plan_reads) args=(--calls 100 --repeat 5) ;;
    *) args=() ;;
  esac
  echo "== bench.$b ${args[*]}"
  start=$(date +%s)
  # a missed target exits 1: its figures are still written and shown
  $py -m "bench.$b" "${args[@]}" --json "$out/$b.json" || { echo "bench.$b exited $?"; status=1; }
  echo "== bench.$b took $(( $(date +%s) - start )) s"
done
$py scripts/perf_page.py
exit $status
