# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Restarts keep the truth: a member that was out of rotation before a
restart (evicted, or it said it was leaving) comes back out of rotation,
and its next announcement puts it back."""

import re
import time
import urllib.parse

import pytest

from beacon_env import (Announcer, Heartbeat, enabled, receiver_config, start_receiver,
                        wait_member)
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon


def restart(h, how):
    if how == "graceful":
        h.graceful()
    else:
        h.stop()
        h.start()


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
@pytest.mark.parametrize("persist", ["Off", "On"])
@pytest.mark.parametrize("left", ["evicted", "leaving"])
def test_a_member_out_of_rotation_stays_out_across_a_restart(
        httpd_factory, backend_factory, left, persist, how):
    udp = free_port()
    timeout = "1" if left == "evicted" else "20"
    h = httpd_factory(extra_config=f"BalancerPersist {persist}",
                      tail_config=receiver_config(udp, timeout=timeout))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    ann.announce(b.url)
    wait_member(h, b.url)
    if left == "leaving":
        ann.announce(b.url, state="leaving")
    wait_member(h, b.url, want_enabled=False)

    mark = h.log_size()
    restart(h, how)
    h.wait_log(r"BCN00011: restored 1 member\(s\)", since=mark)
    assert not enabled(h.worker(b.url)), "a member that was out came back in rotation"
    # announcing as a live backend does: one datagram may still reach the
    # old generation's receiver, in the moment before it stops
    with Heartbeat(ann, b.url, period=0.3):
        wait_member(h, b.url)
    assert h.get("/") == (200, "b")


def manager_set(h, url, **fields):
    """Types fields (w_lf, w_wr, w_ls, ...) into balancer-manager's form for
    url, as an operator does; returns the member after."""
    form = {"b": "cluster", "w": url, "nonce": h.balancer_nonce("cluster"),
            "xml": "1", **{k: str(v) for k, v in fields.items()}}
    headers = dict(h._manager_headers(),
                   **{"Content-Type": "application/x-www-form-urlencoded"})
    status, _, body = h.request("POST", "/balancer-manager",
                                urllib.parse.urlencode(form), headers)
    assert status == 200, body[:300]
    return h.worker(url)


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
@pytest.mark.parametrize("persist", ["Off", "On"])
def test_the_admins_settings_on_a_member_survive_a_restart(
        httpd_factory, backend_factory, persist, how):
    udp = free_port()
    h = httpd_factory(extra_config=f"BalancerPersist {persist}",
                      tail_config=receiver_config(udp, timeout="20"))
    start_receiver(h)
    ann = Announcer(udp)
    stopped, drained = backend_factory("s"), backend_factory("d")
    for b in (stopped, drained):
        ann.announce(b.url)
        wait_member(h, b.url)
    h.set_worker_status("cluster", stopped.url, S=1)
    h.set_worker_status("cluster", drained.url, N=1)
    manager_set(h, drained.url, w_lf=7, w_wr="r7", w_ls=2)
    # the owner keeps them for restarts (once a second)
    h.wait_log(r"BCN00091: kept the settings of %s in balancer://cluster for "
               r"restarts: flags 'N', lbfactor 700, lbset 2, route 'r7'"
               % re.escape(drained.url), since=0)
    mark = h.log_size()
    restart(h, how)
    h.wait_log(r"BCN00011: restored 2 member\(s\)", since=mark)
    s, d = h.worker(stopped.url), h.worker(drained.url)
    assert "Stop" in s["flags"], s
    assert "Drn" in d["flags"] and d["route"] == "r7" and d["lbset"] == 2, d
    assert d["loadfactor"] in ("7", "7.00", 7), d
    with Heartbeat(ann, stopped.url, period=0.3), Heartbeat(ann, drained.url, period=0.3):
        h.wait_log(r"took over 2 existing member", since=mark)
        assert "Stop" in h.worker(stopped.url)["flags"], "an announcement undid Stopped"


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
def test_a_replay_after_a_restart_changes_nothing(httpd_factory, backend_factory, how):
    """A datagram captured while the member was in rotation, replayed after
    it said leaving and the proxy restarted, within MaxSkew: the replay
    marks survive the restart, so it is dropped as replayed."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="20"))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    captured = ann.announce(b.url)
    wait_member(h, b.url)
    ann.announce(b.url, state="leaving")
    wait_member(h, b.url, want_enabled=False)
    mark = h.log_size()
    restart(h, how)
    h.wait_log(r"BCN00050: listening", since=mark)
    mark = h.log_size()
    ann.send(captured)
    h.wait_log(r"dropped datagram from [^:]+:\d+: replayed/reordered ts %s" % re.escape(b.url), since=mark)
    assert not enabled(h.worker(b.url)), "a replay re-enabled a member that left"


def test_a_member_whose_lease_lapsed_while_stopped_comes_back_out(
        httpd_factory, backend_factory):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="2"))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    with Heartbeat(ann, b.url, period=0.3):
        wait_member(h, b.url)
        h.stop()
    started = time.time()
    wait_for(lambda: time.time() - started > 2.5, 5, "the lease to lapse")
    mark = h.log_size()
    start_receiver(h)
    h.wait_log(r"BCN00011: restored 1 member\(s\)", since=mark)
    assert not enabled(h.worker(b.url)), "a member silent past its lease came back in rotation"


@pytest.mark.parametrize("when", ["while running", "while stopped"])
def test_a_forgotten_member_is_not_restored(httpd_factory, backend_factory, when):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(
        udp, timeout="1", extra="ProxyBeaconMaxSkew 1\nProxyBeaconForget 3\n"))
    start_receiver(h)
    ann = Announcer(udp)
    b, live = backend_factory("b"), backend_factory("live")
    with Heartbeat(ann, live.url, period=0.3):
        ann.announce(b.url)
        wait_member(h, b.url)
        wait_member(h, b.url, want_enabled=False)
        if when == "while running":
            h.wait_log(r"BCN00089: forgot backend %s of balancer://cluster" % b.url,
                       timeout=10)
            h.stop()
        else:
            h.stop()
            started = time.time()
            wait_for(lambda: time.time() - started > 3.5, 6, "the forget interval")
        mark = h.log_size()
        start_receiver(h)
        h.wait_log(r"BCN00011: restored 1 member\(s\) of balancer://cluster from "
                   r"the registry; forgot 1", since=mark)
        assert b.url not in [w["name"] for w in h.balancer_members()]
        wait_member(h, live.url)
