"""The marketplace on two hosts that share only PostgreSQL, Redis and the object store
(``tests/faults/several_hosts.py``): buyers on both web servers, one host's release worker killed,
a listing prepared on the other host; every purchase released once, every invariant holding. About a
minute, on servers of its own (a database named after DATABASE_URL's with ``_hosts``, a redis-server
on a spare port, moto's S3 on loopback)."""

import os
import shutil

import pytest

from .conftest import needs_services
from .several_hosts import hosts_config, run
from .under_load import write_json

pytestmark = [
    needs_services,
    pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server (a Redis of the run's own)"),
]


def test_two_hosts_share_only_the_database_the_broker_and_the_object_store(tmp_path):
    pytest.importorskip("moto")
    report = run(hosts_config(os.environ["DATABASE_URL"]), tmp_path / "hosts")
    write_json(report, tmp_path / "hosts.json")
    for name, check in report["checks"].items():
        print(f"{'ok ' if check['ok'] else 'FAIL'} {name}: {check['detail']}")
    failed = [f"{name}: {check['detail']}" for name, check in report["checks"].items() if not check["ok"]]
    assert not failed, "\n".join(failed)
