# Licensed under the Apache License, Version 2.0; see LICENSE.
"""One service's key holder against the others (issue 32, defects 3 and
6): a claim change marks the route table dirty and the table is rebuilt at
most every 200 ms per listener, so a flood of claim changes from one
service neither delays another service's heartbeats past its lease nor
grows the owner's memory, and the flood's last claim is still routed
within that bound; and a balancer whose members may claim more than the
table holds gets a share of it, so that it cannot crowd out the contexts
of the balancers configured after it, and what its share leaves out is
logged."""

import os
import re
import socket
import time
from pathlib import Path

import pytest

import beacon_wire as bw
from beacon_env import ONE_CHILD, Heartbeat, enabled, start_receiver
from httpd import wait_for
from test_resilience import Client, children_cpu_seconds, owner_pid
from test_routing import api_of, claim, routing_proxy, shop_of, wait_routed
from test_services import API_KEY, SHOP_KEY, receivers_json, wait_in

pytestmark = pytest.mark.beacon

# slots=: room for 64,000 claims, the size the issue measured with (an image
# of about 6 MB that each rebuild wrote and the old code copied each time)
SHOP = (f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY} contexts=/shop/*"
        " slots=4000")
API = f"ProxyBeaconBalancer api service=api secret={API_KEY} contexts=/api"
FLOOD = 6000
MEMBERS = 200  # the flood's urls: a table of up to 3,200 long contexts
ROUTE_EVERY = 0.2  # the coalescing bound (docs/routing.md)
# Under make check-asan-module (BEACON_SAN_LOG_DIR set) every datagram
# costs the receiver about ten times as much, its rebuilds or not: the
# flood alone takes some 7 s to drain from the socket, where it takes
# 0.6 s, and ASan's quarantine holds freed memory for a while. The lease
# and the memory bound grow with it; what is measured, a drain well inside
# the lease and memory that does not follow the flood, is the same.
SANITIZED = bool(os.environ.get("BEACON_SAN_LOG_DIR"))
LEASE = 20 if SANITIZED else 2
RSS_GROWTH_KIB = (64 if SANITIZED else 16) * 1024


def rss_kib(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))


def accepted(h, balancer):
    return receivers_json(h)[f"balancer://{balancer}"]["events"]["accepted"]


def settled(read, quiet=0.5, timeout=60):
    """Polls read() until it stops changing for quiet seconds: a flood
    still queued at the socket is being worked through until then."""
    last, since = read(), time.monotonic()

    def still():
        nonlocal last, since
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        return time.monotonic() - since >= quiet
    wait_for(still, timeout, "the receiver working through the flood", interval=0.1)
    return time.monotonic() - quiet


def test_a_flood_of_claim_changes_starves_no_other_service(httpd_factory,
                                                           backend_factory, capsys):
    h, udp = routing_proxy(httpd_factory, timeout=str(LEASE), balancers=(SHOP, API),
                           extra_config=ONE_CHILD)
    start_receiver(h)
    shop, api = shop_of(udp), api_of(udp)
    a, b, last = backend_factory("shop-1"), backend_factory("api-1"), backend_factory("last")
    # every datagram claims 16 contexts its url did not claim before: each
    # one changes shop's claims; signed beforehand, so that they go out at
    # once
    urls = [a.url] + [f"http://127.0.0.1:{20000 + k}" for k in range(1, MEMBERS)]
    flood = [bw.announce(SHOP_KEY, url=urls[i % MEMBERS], ts=shop.next_ts(),
                         extra=[("svc", "shop"), ("ctx", ",".join(
                             f"/shop/{i:06d}-{j:02d}-{'x' * 40}" for j in range(16)))])
             for i in range(FLOOD)]

    class ApiHeartbeat(Heartbeat):
        def tick(self):
            claim(api, b.url, "/api")

    with ApiHeartbeat(api, b.url, period=0.2):
        wait_routed(h, "/api/x", "api-1")
        owner = owner_pid(h)
        rss_before, cpu_before = rss_kib(owner), children_cpu_seconds(h)
        with Client(h, period=0.01, path="/api/x") as client:
            started = time.monotonic()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                for datagram in flood:
                    s.sendto(datagram, ("127.0.0.1", udp))
            busy = settled(lambda: accepted(h, "shop")) - started
            wait_for(lambda: client.ok + client.failed > 100, 20, "client requests")
        rss_after, cpu = rss_kib(owner), children_cpu_seconds(h) - cpu_before
        assert enabled(h.worker(b.url, balancer="api"))
        # the flood's members fall silent and lapse (shop answers with
        # whichever member is in rotation); then a member of shop's own
        # changes its claim ten times at once: the first is routed at
        # once, the last within the bound of the rebuild before it
        wait_for(lambda: not any(enabled(w) for w in h.balancer_members("shop")),
                 LEASE + 8, "the flood's members out of rotation")
        claim(shop, last.url, "/shop/first")
        wait_routed(h, "/shop/first/x", "last")
        for i in range(10):
            claim(shop, last.url, f"/shop/last{i}")
        sent = time.monotonic()
        wait_routed(h, "/shop/last9/x", "last")
        routed = time.monotonic() - sent
        assert h.get("/shop/first/x")[0] == 404
    total = client.ok + client.failed
    with capsys.disabled():  # the figures belong in the test run's output
        print(f"\nroute flood: {FLOOD} claim changes, {accepted(h, 'shop')} accepted, "
              f"receiver busy {busy:.2f} s, children CPU {cpu:.2f} s; api requests "
              f"{client.failed}/{total} failed {client.statuses}; owner RSS "
              f"{rss_before // 1024} -> {rss_after // 1024} MiB; last claim routed "
              f"{routed * 1000:.0f} ms after it was sent")
    assert "evicted backend %s" % b.url not in h.error_log()
    assert client.failed == 0, client.statuses
    assert rss_after - rss_before < RSS_GROWTH_KIB, (rss_before, rss_after)
    # a rebuild names at most 16 contexts routed and 16 withdrawn (one
    # announcement's worth), and counts the rest in one line
    log = h.error_log()
    assert len(re.findall(r"BCN00146: context", log)) <= 16 * log.count("BCN00153:")
    assert re.search(r"BCN00201: route table of udp 127\.0\.0\.1:%d: \d+ more context\(s\) "
                     r"routed and \d+ more withdrawn" % udp, log)
    # the bound, plus the time a GET takes to see it on a loaded machine
    assert routed < ROUTE_EVERY + 0.5, routed


def test_a_balancer_that_fills_the_route_table_crowds_out_no_other(httpd_factory,
                                                                  backend_factory):
    # shop, first in order, may claim 16 contexts a registry entry (4,097
    # slots and more): more than the 65,536 routes of a table; api one
    big = SHOP.replace("slots=4000", "slots=4097")
    h, udp = routing_proxy(httpd_factory, balancers=(big, API))
    start_receiver(h)
    # said at start, before any claim: shop's share is less than it may claim
    h.wait_log(r"BCN00202: route table of udp 127\.0\.0\.1:%d: the members of "
               r"balancer://shop may claim up to \d+ contexts, its share is 65535 "
               r"\(65536 routes shared by 2 balancer\(s\)\)" % udp, since=0)
    shop, api = shop_of(udp), api_of(udp)
    b = backend_factory("api-1")
    claim(api, b.url, "/api")
    wait_routed(h, "/api/x", "api-1")
    members = 4097
    flood = [bw.announce(SHOP_KEY, url=f"http://127.0.0.1:{20000 + k}", ts=shop.next_ts(),
                         extra=[("svc", "shop"), ("ctx", ",".join(
                             f"/shop/{k:04d}-{j:02d}" for j in range(16)))])
             for k in range(members)]
    mark = h.log_size()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for start in range(0, members, 512):  # in steps the socket holds whole
            for datagram in flood[start:start + 512]:
                s.sendto(datagram, ("127.0.0.1", udp))
            # the status pages take seconds with 65,536 contexts: the log says it
            h.wait_log(r"BCN00030: added backend http://127\.0\.0\.1:%d to balancer://shop"
                       % (20000 + min(start + 512, members) - 1), timeout=30, since=mark)
    # 65,552 contexts claimed, 65,535 routed (api keeps its one): the 17
    # left out are said, with the balancer's share
    h.wait_log(r"BCN00200: route table of udp 127\.0\.0\.1:%d: \d+ context\(s\) claimed "
               r"by members of balancer://shop are not routed: its share of the table "
               r"\(65535 of 65536 routes\) is full" % udp, timeout=10, since=mark)
    assert h.get("/api/x") == (200, "api-1")
    assert "GET /api/x" in b.requests()
