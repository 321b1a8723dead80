"""Read each file given the way the ingest worker does (``dataset_process``'s steps: the first read,
then a change of column types, with the limits
from the settings) and print, per file, what came of it and how long it took; then the process's
peak resident memory (VmHWM), for ``test_ingest_memory.py``. Run as
``python -m tests.market.ingest_probe TMPDIR FILE...``; no database is used.

The process is the worker as ``requirements.txt`` installs it: pandas (in the test requirements only,
for the benches and the tests that compare with it) cannot be imported here. pyarrow imports pandas
when it can, the first time it is handed a Python list, and that alone holds 31 MB the worker never
has: with it the probe measured the test environment, not the worker."""

import importlib.abc
import json
import os
import sys
import time


class _NotInstalled(importlib.abc.MetaPathFinder):
    """Imports of ``names`` fail as they do where the package is not installed."""

    def __init__(self, *names: str):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def peak_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))


def main() -> None:
    sys.meta_path.insert(0, _NotInstalled("pandas"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "market.settings")
    import django

    django.setup()
    from market.catalog import ingest, uploads

    tmp, paths = sys.argv[1], sys.argv[2:]
    limits = uploads.ingest_limits()
    results = {"loaded_mb": peak_mb(), "files": {}}
    for path in paths:
        start = time.monotonic()
        raw, typed = os.path.join(tmp, "raw.parquet"), os.path.join(tmp, "typed.parquet")
        try:
            # the first read (one pass, no raw file: the upload is kept), then a change of types (the
            # upload read again into a raw file, the typed file rebuilt from it)
            found = ingest.read_upload(path, None, max_rows=10**7, max_columns=100, limits=limits,
                                       typed_path=typed, tmpdir=tmp)
            ingest.read_upload(path, raw, max_rows=10**7, max_columns=100, limits=limits)
            ingest.write_typed(raw, typed, found.columns, tmpdir=tmp, limits=limits)
            outcome = {"rows": found.rows}
        except ingest.IngestError as exc:
            outcome = {"refused": exc.reasons}
        outcome["seconds"] = time.monotonic() - start
        results["files"][os.path.basename(path)] = outcome
    results["peak_mb"] = peak_mb()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
