"""Webhook addresses (issue 27): only public unicast addresses are reached when WEBHOOKS_ALLOW_PRIVATE is
off. IPv6 forms that embed a private, loopback, link-local or metadata IPv4 address, and other non-global
IPv6 ranges, are refused when an endpoint is made; a host name that resolves to such an address when a
delivery is sent fails that delivery with the reason, and no connection is made; the connection goes to
the address that was checked (the name is not looked up again)."""

from __future__ import annotations

import socket

import pytest
from django.test import override_settings

from market.webhooks import transport
from market.webhooks.models import Endpoint
from market.webhooks.services import delivery_attempt, endpoint_create, endpoint_ping

pytestmark = pytest.mark.django_db

#: each form, and what it stands for
REFUSED = [
    ("64:ff9b::a9fe:a9fe", "NAT64 of the metadata address 169.254.169.254"),
    ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1"),
    ("64:ff9b::a00:1", "NAT64 of 10.0.0.1"),
    ("64:ff9b:1::a9fe:a9fe", "NAT64's local-use prefix"),
    ("2002:a9fe:a9fe::1", "6to4 of 169.254.169.254"),
    ("2002:7f00:1::", "6to4 of 127.0.0.1"),
    ("2002:c0a8:101::1", "6to4 of 192.168.1.1"),
    ("::a9fe:a9fe", "IPv4-compatible 169.254.169.254"),
    ("::127.0.0.1", "IPv4-compatible 127.0.0.1"),
    ("::8.8.8.8", "IPv4-compatible, deprecated whatever it holds"),
    ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1"),
    ("::ffff:169.254.169.254", "IPv4-mapped metadata address"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
    ("2001::1", "Teredo"),
    ("fec0::1", "site-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456:789a::1", "unique-local"),
    ("fe80::1", "link-local"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("169.254.169.254", "IPv4 metadata"),
    ("100.64.0.1", "IPv4 shared address space"),
    ("127.0.0.1", "IPv4 loopback"),
]
ALLOWED = ["8.8.8.8", "2606:4700:4700::1111", "2001:4860:4860::8888", "64:ff9b::808:808", "2002:808:808::1",
           "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address,form", REFUSED, ids=[a for a, _ in REFUSED])
def test_a_non_global_address_is_refused_with_its_reason(address, form):
    assert transport.refusal(address) is not None, form


@pytest.mark.parametrize("address", ALLOWED)
def test_a_public_address_is_allowed(address):
    """A NAT64 or 6to4 address of a public IPv4 address is that address: a DNS64 network reaches it so."""
    assert transport.refusal(address) is None


@override_settings(WEBHOOKS_ALLOW_PRIVATE=False)
@pytest.mark.parametrize("address", [a for a, _ in REFUSED if ":" in a], ids=[a for a, _ in REFUSED if ":" in a])
def test_an_endpoint_on_an_ipv6_literal_embedding_a_private_address_is_refused(api, buyer, address):
    answer = api(buyer).post("/api/v1/webhooks/endpoints/", {"url": f"http://[{address}]:8080/hook",
                                                             "events": ["purchase.released"]}, format="json")
    assert answer.status_code == 400, answer.content
    assert "private or local" in answer.json()["error"]["fields"]["url"][0]
    assert not Endpoint.objects.exists()


class Resolver:
    """``socket.getaddrinfo`` answering from a table that a test changes (a DNS name that rebinds)."""

    def __init__(self, monkeypatch, table: dict[str, list[str]]):
        self.table, self.asked = table, []
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            if host not in self.table:
                return real(host, port, *args, **kwargs)
            self.asked.append(host)
            return [
                (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port, 0, 0) if ":" in a else (a, port))
                for a in self.table[host]
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def connections(monkeypatch):
    """Every connection the transport makes, recorded and refused (no packet leaves the test)."""
    made = []

    def create_connection(address, *args, **kwargs):
        made.append(address)
        raise ConnectionRefusedError("refused by the test")

    monkeypatch.setattr(transport.socket, "create_connection", create_connection)
    return made


@override_settings(WEBHOOKS_ALLOW_PRIVATE=False)
@pytest.mark.parametrize("private", ["169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::127.0.0.1"])
def test_a_name_resolving_to_a_private_address_at_delivery_fails_the_delivery_without_connecting(
    buyer, monkeypatch, connections, private
):
    dns = Resolver(monkeypatch, {"hooks.example.com": ["93.184.216.34"]})
    endpoint, _ = endpoint_create(user=buyer, url="https://hooks.example.com/in", events=["purchase.released"])
    dns.table["hooks.example.com"] = ["93.184.216.34", private]  # rebound since: one private address among them
    delivery = delivery_attempt(delivery_id=endpoint_ping(user=buyer, endpoint_id=endpoint.pk).pk)

    assert connections == []  # refused before any connection
    assert delivery.status == "pending" and delivery.last_status_code is None
    assert "private or local network" in delivery.last_error and "hooks.example.com" in delivery.last_error
    assert delivery.attempt_log.get().error == delivery.last_error


@override_settings(WEBHOOKS_ALLOW_PRIVATE=False)
def test_the_connection_goes_to_the_address_checked_and_the_name_is_looked_up_once(buyer, monkeypatch, connections):
    dns = Resolver(monkeypatch, {"hooks.example.com": ["93.184.216.34"]})
    endpoint, _ = endpoint_create(user=buyer, url="http://hooks.example.com:8080/in", events=["purchase.released"])
    dns.asked.clear()
    delivery = delivery_attempt(delivery_id=endpoint_ping(user=buyer, endpoint_id=endpoint.pk).pk)
    assert dns.asked == ["hooks.example.com"]  # once, for the check; the connection uses its answer
    assert [address for address, _ in connections] == ["93.184.216.34"]
    assert connections[0][1] == 8080
    assert "could not reach it" in delivery.last_error


@override_settings(WEBHOOKS_ALLOW_PRIVATE=True)
def test_private_addresses_are_reached_when_allowed(buyer, monkeypatch, connections):
    Resolver(monkeypatch, {"hooks.internal": ["64:ff9b::a00:1"]})
    endpoint, _ = endpoint_create(user=buyer, url="http://hooks.internal/in", events=["purchase.released"])
    delivery_attempt(delivery_id=endpoint_ping(user=buyer, endpoint_id=endpoint.pk).pk)
    assert [address for address, _ in connections] == ["64:ff9b::a00:1"]
