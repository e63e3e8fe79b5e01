# Licensed under the Apache License, Version 2.0; see LICENSE.
"""FailoverAttempts (maxattempts): beacon sets it as httpd does for static
members only while the admin has not; a value typed into balancer-manager
is the admin's, and no member joining changes it."""

import urllib.parse

import pytest

from beacon_env import Announcer, receiver_config, start_receiver, wait_member
from httpd import MANAGER_NS, free_port

pytestmark = pytest.mark.beacon


def max_attempts(h):
    b = h._balancer_el(h.manager_xml(), "cluster")
    text = b.findtext("h:maxattempts", namespaces=MANAGER_NS)
    return None if text is None else int(text)


def set_max_attempts(h, n):
    form = {"b": "cluster", "nonce": h.balancer_nonce("cluster"), "b_max": str(n),
            "xml": "1"}
    headers = dict(h._manager_headers(),
                   **{"Content-Type": "application/x-www-form-urlencoded"})
    status, _, body = h.request("POST", "/balancer-manager",
                                urllib.parse.urlencode(form), headers)
    assert status == 200, body[:300]


def proxy(httpd_factory):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="30"))
    start_receiver(h)
    return h, Announcer(udp)


def test_beacon_counts_failover_attempts_while_the_admin_has_not(
        httpd_factory, backend_factory):
    h, ann = proxy(httpd_factory)
    backends = [backend_factory(f"b{i}") for i in range(3)]
    for b in backends:
        ann.announce(b.url)
        wait_member(h, b.url)
    assert max_attempts(h) == 2


@pytest.mark.parametrize("when", ["before any member", "after members joined"])
def test_failover_attempts_typed_into_balancer_manager_stay(
        httpd_factory, backend_factory, when):
    h, ann = proxy(httpd_factory)
    backends = [backend_factory(f"b{i}") for i in range(4)]
    if when == "after members joined":
        for b in backends[:2]:
            ann.announce(b.url)
            wait_member(h, b.url)
    set_max_attempts(h, 5)  # not what beacon would set: members - 1
    for b in backends:
        ann.announce(b.url)
        wait_member(h, b.url)
    assert max_attempts(h) == 5, "a member joining overwrote the admin's maxattempts"
