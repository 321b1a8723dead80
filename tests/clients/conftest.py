"""Tests of ``gradual-client`` (``clients/python``) against a live server with a real Celery worker.

The package is imported from the repository's ``clients/python/src`` (put on ``sys.path`` here), so the
suite needs no install step; ``test_the_package_installs`` installs it with pip into a temporary folder
and runs it from there."""

import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "python"
SOURCE = PACKAGE / "src"
if str(SOURCE) not in sys.path:
    sys.path.insert(0, str(SOURCE))



@pytest.fixture
def key_for():
    """A new API key's secret for a user, as the account page or POST keys/ would hand it out."""
    from market.accounts.services import api_key_create

    def make(user):
        _, secret = api_key_create(user=user, name="gradual-client tests")
        return secret

    return make


@pytest.fixture
def buyer_key(funded_buyer, key_for):
    """A buyer with 100 credits, and an API key of theirs."""
    return key_for(funded_buyer("bea", 100))


@pytest.fixture
def connect(live_server):
    """``connect(key)``: a Client of the live server; closed after the test."""
    from gradual_client import Client

    clients = []

    def make(key=None, **options):
        client = Client(live_server.url, key, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
