# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Load a backend reports (issue 34): the lbfactor it announces may change
with every announcement. The receiver applies a change of at least 5 %
at once, a smaller one once the factor has not changed for 10 s, and logs
a change at debug when the factor changed in the last minute (a load
report), at info otherwise (a changed static value)."""

import collections
import re
import socket
import time

import pytest

from beacon_env import (Announcer, make_proxy, receiver_config, sender_httpd,
                        start_receiver, wait_member)
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon


def proxy(httpd_factory):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="60"))
    start_receiver(h)
    return h, Announcer(udp)


def announce(ann, url, lbfactor):
    ann.announce(url, extra=[("lbfactor", lbfactor)])


def factor(h, url):
    return next(w for w in h.balancer_members() if w["name"] == url)["loadfactor"]


def processed(h, ann, backend_factory, name):
    """Every datagram sent before this one has been handled: the receiver
    reads its socket in order, and a new member shows when it is added."""
    marker = backend_factory(name)
    ann.announce(marker.url)
    wait_member(h, marker.url)


def test_a_small_change_waits_and_a_large_one_applies_at_once(httpd_factory,
                                                              backend_factory):
    h, ann = proxy(httpd_factory)
    b = backend_factory("b")
    announce(ann, b.url, "50")
    wait_member(h, b.url)
    assert factor(h, b.url) == "50.00"

    announce(ann, b.url, "52")            # 4 %: waits
    processed(h, ann, backend_factory, "m1")
    assert factor(h, b.url) == "50.00"

    mark = h.log_size()
    announce(ann, b.url, "60")            # 20 %: at once
    wait_for(lambda: factor(h, b.url) == "60.00", 5, "60.00 in force")
    changed_at = time.monotonic()
    line = h.wait_log(r"^.*BCN00095: changed lbfactor of %s to 60\.00.*$"
                      % re.escape(b.url), since=mark).group(0)
    # its factor changed when it joined, moments ago: a load report
    assert "[proxy_beacon:debug]" in line, line

    # 61 is 1.7 % of 60: applied once the factor has held for 10 s, not before
    def applied():
        announce(ann, b.url, "61")
        return factor(h, b.url) == "61.00"
    wait_for(applied, 20, "61.00 in force", interval=0.5)
    waited = time.monotonic() - changed_at
    assert 8.0 <= waited <= 15.0, waited


def test_a_changed_static_value_is_logged_at_info(httpd_factory, backend_factory):
    h, ann = proxy(httpd_factory)
    b = backend_factory("b")
    announce(ann, b.url, "1")             # 1.00 is httpd's default: no change
    wait_member(h, b.url)
    mark = h.log_size()
    announce(ann, b.url, "2.5")
    line = h.wait_log(r"^.*BCN00095: changed lbfactor of %s to 2\.50.*$"
                      % re.escape(b.url), since=mark).group(0)
    assert "[proxy_beacon:info]" in line, line


def test_a_member_reporting_less_headroom_gets_fewer_requests(httpd_factory,
                                                              backend_factory):
    h, ann = proxy(httpd_factory)
    busy, idle = backend_factory("busy"), backend_factory("idle")
    for b in (busy, idle):
        announce(ann, b.url, "50")
        wait_member(h, b.url)
    even = collections.Counter(h.get("/")[1] for _ in range(60))
    assert 0.5 <= even["busy"] / max(even["idle"], 1) <= 2.0, even

    announce(ann, busy.url, "10")
    wait_for(lambda: factor(h, busy.url) == "10.00", 5, "10.00 in force")
    skewed = collections.Counter(h.get("/")[1] for _ in range(60))
    # byrequests: 10 against 50, one in six to the busy member
    assert skewed["busy"] <= 15 and skewed["idle"] >= 45, skewed


# ---- slow start -------------------------------------------------------------

def slow_proxy(httpd_factory, where="receiver", timeout="60", duration="6"):
    """A receiver with a slow start of duration seconds (6: steps of 1 s,
    10, 25, 40, ..., 100 %), set by ProxyBeaconSlowStart or by slowstart=
    of its balancer."""
    udp = free_port()
    if where == "receiver":
        config = receiver_config(udp, timeout=timeout,
                                 extra=f"ProxyBeaconSlowStart {duration}\n")
    else:
        config = receiver_config(udp, balancer=f"cluster slowstart={duration}s",
                                 timeout=timeout)
    h = httpd_factory(tail_config=config)
    start_receiver(h)
    return h, Announcer(udp)


def shares(h, n=40):
    return collections.Counter(h.get("/")[1] for _ in range(n))


@pytest.mark.parametrize("where", ["receiver", "balancer"])
def test_slow_start_ramps_a_new_member(httpd_factory, backend_factory, where):
    h, ann = slow_proxy(httpd_factory, where)
    old, new = backend_factory("old"), backend_factory("new")
    announce(ann, old.url, "10")
    wait_member(h, old.url)
    wait_for(lambda: factor(h, old.url) == "10.00", 10, "old at its whole factor")

    mark = h.log_size()
    announce(ann, new.url, "10")
    wait_member(h, new.url)
    h.wait_log(r"BCN00225: slow start of %s in balancer://cluster: 10%% of its "
               r"lbfactor, all of it after 6000 ms" % re.escape(new.url), since=mark)
    first = shares(h)
    seen = {factor(h, new.url)}
    # the steps, seen in balancer-manager, and only whole steps
    while factor(h, new.url) != "10.00":
        seen.add(factor(h, new.url))
        assert len(seen) < 20, seen
        wait_for(lambda: factor(h, new.url) not in seen or factor(h, new.url) == "10.00",
                 3, f"the next step after {sorted(seen)}")
    last = shares(h)
    steps = sorted(float(f) for f in seen)
    assert steps[0] <= 2.5 and len(steps) >= 3, steps   # 1.00, 2.50, ...
    assert first["new"] <= 10, first                   # about 1 in 11 (4 of 40)
    assert last["new"] >= 14, last                     # about 1 in 2 (20 of 40)


def test_the_views_show_the_factor_in_force_the_announced_one_and_the_ramp(
        httpd_factory, backend_factory):
    from test_allow import PROXYPASS, receiver_json
    from test_metrics import find, metrics_page
    from test_status import STATUS_PAGE

    udp = free_port()
    h = httpd_factory(status=True, tail_config=STATUS_PAGE + receiver_config(
        udp, timeout="60", extra="ProxyBeaconSlowStart 6\n"))
    h.proxypass_config = PROXYPASS
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    announce(ann, b.url, "25")
    wait_member(h, b.url)

    [m] = [m for m in receiver_json(h)["members"] if m["url"] == b.url]
    assert (m["lbfactor"], m["lbfactor_announced"], m["slow_start"]) == (2.5, 25.0, 10), m
    status, page = h.get("/beacon-status")
    assert status == 200 and "2.50 of 25.00" in page and "slow start 10%" in page, page
    metrics = metrics_page(h)
    assert find(metrics, "beacon_member_lbfactor", member=b.url) == [2.5], metrics
    assert find(metrics, "beacon_member_lbfactor_announced", member=b.url) == [25.0]
    assert " slow_start=1\n" in auto_balancer_line(h)

    wait_for(lambda: factor(h, b.url) == "25.00", 10, "its whole factor")
    [m] = [m for m in receiver_json(h)["members"] if m["url"] == b.url]
    assert (m["lbfactor"], m["lbfactor_announced"], m["slow_start"]) == (25.0, 25.0, None), m
    assert " slow_start=0\n" in auto_balancer_line(h)


def auto_balancer_line(h):
    """server-status?auto's BeaconBalancer line, with its newline."""
    status, text = h.get("/server-status?auto")
    assert status == 200, text
    return re.search(r"^BeaconBalancer: .*\n", text, re.M).group(0)


def test_a_member_back_after_an_eviction_starts_slowly_again(httpd_factory,
                                                             backend_factory):
    h, ann = slow_proxy(httpd_factory, timeout="1")
    b = backend_factory("b")
    announce(ann, b.url, "10")
    wait_member(h, b.url)
    wait_for(lambda: factor(h, b.url) == "10.00", 10, "its whole factor")
    h.wait_log(r"evicted backend %s" % re.escape(b.url), timeout=10)
    mark = h.log_size()
    announce(ann, b.url, "10")
    h.wait_log(r"BCN00225: slow start of %s" % re.escape(b.url), since=mark)
    assert factor(h, b.url) == "1.00"


def test_a_restart_is_no_join(httpd_factory, backend_factory):
    """A member the restart puts back keeps its whole factor, even one
    caught in the middle of its slow start."""
    h, ann = slow_proxy(httpd_factory, duration="60")
    b = backend_factory("b")
    announce(ann, b.url, "10")
    wait_member(h, b.url)
    assert factor(h, b.url) == "1.00"
    # what a restart gives back, as the owner keeps it each second
    h.wait_log(r"BCN00091: kept the settings of %s .* lbfactor 100," % re.escape(b.url))
    h.graceful()
    wait_for(lambda: factor(h, b.url) == "10.00", 10, "its whole factor after a restart")
    announce(ann, b.url, "10")
    processed(h, ann, backend_factory, "m1")
    assert factor(h, b.url) == "10.00"


@pytest.mark.parametrize("option", ["slowstart=abc", "slowstart=-1", "slowstart=2d",
                                    "slowstart=1 slowstart=2"])
def test_apache2_t_refuses_a_bad_slowstart(httpd_factory, option):
    h = httpd_factory(tail_config=receiver_config(free_port(),
                                                  balancer=f"cluster {option}"))
    rc, out = h.check_config()
    assert rc != 0, f"{option}: apache2 -t passed:\n{out}"
    lines = [l for l in out.splitlines() if l.startswith("ProxyBeaconBalancer: slowstart=")]
    assert len(lines) == 1, out


# One child of 10 workers: 8 connections that never finish their request
# line keep 8 of them busy (a worker reads a request's head until Timeout).
TEN_WORKERS = ("StartServers 1\nServerLimit 1\nThreadsPerChild 10\n"
               "MaxRequestWorkers 10\nMinSpareThreads 1\nMaxSpareThreads 10\n")


def hold_workers(port, n):
    held = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\n")
        held.append(s)
    return held


def test_auto_lowers_the_factor_of_a_busy_backend_and_raises_it_back(
        httpd_factory):
    """ProxyBeaconLBFactor auto: an idle backend announces 100; with 8 of
    its 10 workers busy its factor falls (to 28 once the 5 s average has
    settled), and it rises again when they are free."""
    proxy, ann = make_proxy(httpd_factory)
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{ann.addr[1]}"],
                           extra=TEN_WORKERS + "ProxyBeaconLBFactor auto\n")
    backend.start()
    url = f"http://127.0.0.1:{backend.port}"
    wait_member(proxy, url)
    wait_for(lambda: float(factor(proxy, url)) == 100.0, 10, "idle: 100")

    held = hold_workers(backend.port, 8)
    try:
        wait_for(lambda: float(factor(proxy, url)) < 50.0, 30,
                 "8 of 10 workers busy: below 50", interval=0.2)
        # never below what 8 of 10 busy maps to (100 - 90 * 0.8)
        assert float(factor(proxy, url)) >= 28.0
    finally:
        for s in held:
            s.close()
    wait_for(lambda: float(factor(proxy, url)) > 90.0, 40,
             "workers free again: above 90", interval=0.2)


def test_auto_is_accepted_and_nonsense_is_refused_at_config_time(httpd_factory):
    ok = sender_httpd(httpd_factory, ["127.0.0.1:5556"],
                      extra="ProxyBeaconLBFactor auto\n")
    assert ok.check_config()[0] == 0
    bad = sender_httpd(httpd_factory, ["127.0.0.1:5556"],
                       extra="ProxyBeaconLBFactor automatic\n")
    code, output = bad.check_config()
    assert code != 0
    assert ("ProxyBeaconLBFactor: 'automatic' is not a load factor (1 to 100 "
            "with at most two decimals, e.g. 2.5, or auto)") in output
