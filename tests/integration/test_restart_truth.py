# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Restarts keep the truth and lose nothing: a member comes back as it was
when httpd stopped (in rotation with a fresh lease, or out of rotation
until its next announcement), with what the admin set and the backend
announced up to the stop itself; httpd's downtime counts for
ProxyBeaconForget, not for the lease; replay marks outlive the owner,
also of urls whose slot went to another; and a departed member's route
goes to the member in rotation that announces it."""

import contextlib
import os
import re
import signal
import time
import urllib.parse

import pytest

from beacon_env import (Announcer, Heartbeat, enabled, receiver_config, restart,
                        start_receiver, wait_member)
from httpd import free_port, logged_at, wait_for

pytestmark = pytest.mark.beacon


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


def down_for(httpd_factory, backend_factory, seconds, **receiver):
    """A proxy (receiver_config's **receiver) with one live member, stopped
    for seconds and started again; returns (httpd, backend, log mark before
    the start)."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, **receiver))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    with Heartbeat(ann, b.url, period=0.3):
        wait_member(h, b.url)
        h.stop()
    started = time.time()
    wait_for(lambda: time.time() - started > seconds, seconds + 3, "httpd's downtime")
    mark = h.log_size()
    start_receiver(h)
    return h, b, mark


def test_a_live_member_is_served_at_once_after_a_stop_longer_than_its_lease(
        httpd_factory, backend_factory):
    """The proxy's own downtime is no evidence that a backend died: a member
    in rotation when httpd stopped comes back in rotation with one fresh
    lease from the start, as after a hand-off; if it stays silent, it is
    evicted one timeout after the new owner took over."""
    timeout = 2
    h, b, mark = down_for(httpd_factory, backend_factory, timeout + 0.5,
                          timeout=str(timeout))
    h.wait_log(r"BCN00011: restored 1 member\(s\)", since=mark)
    assert enabled(h.worker(b.url)), "a live member came back out of rotation"
    statuses = [h.get("/")[0] for _ in range(20)]
    assert statuses == [200] * 20, statuses
    took_over = h.wait_log(r"BCN00060: took over 1 existing member", since=mark)
    evicted = h.wait_log(r"BCN00035: evicted backend %s" % re.escape(b.url),
                         timeout=timeout + 10, since=mark)
    waited = logged_at(evicted) - logged_at(took_over)
    assert timeout - 1 < waited < timeout + 3, f"evicted {waited:.1f} s after take-over"


def test_a_live_member_silent_past_forget_while_httpd_is_down_is_forgotten(
        httpd_factory, backend_factory):
    """Downtime counts for ProxyBeaconForget, not for the lease."""
    # Forget is grown to timeout + 2 x MaxSkew + 1 s = 4 s
    h, b, mark = down_for(httpd_factory, backend_factory, 4.5, timeout="1",
                          extra="ProxyBeaconMaxSkew 1\nProxyBeaconForget 3\n")
    h.wait_log(r"BCN00011: restored 0 member\(s\) of balancer://cluster from "
               r"the registry; forgot 1", since=mark)
    assert b.url not in [w["name"] for w in h.balancer_members()]


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
def test_an_admin_edit_just_before_a_restart_is_kept(httpd_factory, backend_factory, how):
    """Settings are taken at the stop itself: an admin who sets Stopped and
    restarts within the same second finds the member Stopped."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="20"))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    ann.announce(b.url)
    wait_member(h, b.url)
    # let the once-a-second keeping take the member as it is before the edit
    h.wait_log(r"BCN00091: kept the settings of %s" % re.escape(b.url), since=0)
    h.set_worker_status("cluster", b.url, S=1)
    mark = h.log_size()
    restart(h, how)
    h.wait_log(r"BCN00011: restored 1 member\(s\)", since=mark)
    assert "Stop" in h.worker(b.url)["flags"], "the admin's Stopped was lost"


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
def test_a_route_announced_just_before_a_restart_is_kept(httpd_factory, backend_factory,
                                                         how):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="20"))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    ann.announce(b.url, extra=[("route", "r1"), ("lbfactor", "2")])
    wait_member(h, b.url)
    h.wait_log(r"BCN00091: kept the settings of %s .*route 'r1'" % re.escape(b.url),
               since=0)
    mark = h.log_size()
    ann.announce(b.url, extra=[("route", "r2"), ("lbfactor", "3")])
    h.wait_log(r"BCN00095: changed lbfactor of %s to 3.00" % re.escape(b.url), since=mark)
    restart(h, how)
    h.wait_log(r"BCN00011: restored 1 member\(s\)", since=mark)
    w = h.worker(b.url)
    assert w["route"] == "r2" and w["loadfactor"] in ("3", "3.00"), w


def test_an_announced_route_is_compared_with_the_member_not_the_last_announcement(
        httpd_factory, backend_factory):
    """The backend owns what it announces: a member whose route differs
    from the one its backend announces gets it again with the next
    announcement, even when that announcement is the same as the last."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="20"))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    ann.announce(b.url, extra=[("route", "r1")])
    wait_member(h, b.url)
    assert manager_set(h, b.url, w_wr="typed")["route"] == "typed"
    mark = h.log_size()
    ann.announce(b.url, extra=[("route", "r1")])
    h.wait_log(r"BCN00094: changed route of %s to r1" % re.escape(b.url), since=mark)
    assert h.worker(b.url)["route"] == "r1"


def owner_pid(h):
    """The child that holds the receiver: it logged the last take-over or
    'listening' line."""
    pids = re.findall(r"\[pid (\d+):tid \d+\] BCN000(?:50|60):", h.error_log())
    assert pids, "no receiver is listening"
    return int(pids[-1])


@contextlib.contextmanager
def slot_recycled_from_a_to_b(httpd_factory, backend_factory):
    """A receiver of one growth slot: a joins and leaves, then b, announcing
    every 0.3 s while the block runs, takes a's slot. Yields h, its
    Announcer, a, b and a's first announcement."""
    udp = free_port()
    h = httpd_factory(growth=1, tail_config=receiver_config(udp, timeout="1"))
    start_receiver(h)
    ann = Announcer(udp)
    a, b = backend_factory("a"), backend_factory("b")
    captured = ann.announce(a.url)
    wait_member(h, a.url)
    ann.announce(a.url, state="leaving")
    wait_member(h, a.url, want_enabled=False)
    with Heartbeat(ann, b.url, period=0.3):
        h.wait_log(r"BCN00038: recycled slot of %s for %s" % (re.escape(a.url),
                                                             re.escape(b.url)),
                   timeout=40)
        wait_member(h, b.url)
        yield h, ann, a, b, captured


@pytest.mark.parametrize("change", ["graceful restart", "owner exit"])
def test_a_replay_of_a_url_whose_slot_was_recycled_is_dropped_after_an_owner_change(
        httpd_factory, backend_factory, change):
    """a leaves and b takes its slot; a captured announcement of a, replayed
    within MaxSkew after the receiver changed owner, must not bring a back:
    its replay mark is in the registry, not only in the last owner's
    memory."""
    with slot_recycled_from_a_to_b(httpd_factory, backend_factory) as (h, ann, a, b, captured):
        mark = h.log_size()
        if change == "graceful restart":
            h.graceful()
        else:
            victim = owner_pid(h)
            assert victim in h.child_pids()
            os.kill(victim, signal.SIGKILL)
        h.wait_log(r"\[pid (\d+):tid \d+\] BCN00060: took over 1 existing member",
                   timeout=30, since=mark)
        mark = h.log_size()
        ann.send(captured)
        h.wait_log(r"dropped datagram from [^:]+:\d+: replayed/reordered ts %s"
                   % re.escape(a.url), since=mark)
        assert a.url not in [w["name"] for w in h.balancer_members()]
        assert [w["name"] for w in h.balancer_members()] == [b.url]


def test_the_replay_mark_of_a_url_waiting_for_a_slot_rises_and_outlives_its_owner(
        httpd_factory, backend_factory):
    """a's slot went to b; a announces again while it waits for a slot (none
    is free): its replay mark in the registry rises to that announcement,
    found by the owner's index of the entries, so a replay of it after a
    graceful restart is dropped and a stays out."""
    with slot_recycled_from_a_to_b(httpd_factory, backend_factory) as (h, ann, a, b, _):
        mark = h.log_size()
        waiting = ann.announce(a.url)
        # its second copy dropped: the first was taken, in order
        ann.send(waiting)
        h.wait_log(r"dropped datagram from [^:]+:\d+: replayed/reordered ts %s"
                   % re.escape(a.url), since=mark)
        mark = h.log_size()
        h.graceful()
        h.wait_log(r"BCN00060: took over 1 existing member", timeout=30, since=mark)
        mark = h.log_size()
        ann.send(waiting)
        h.wait_log(r"dropped datagram from [^:]+:\d+: replayed/reordered ts %s"
                   % re.escape(a.url), since=mark)
        assert [w["name"] for w in h.balancer_members()] == [b.url]


def test_a_member_out_of_rotation_gives_up_its_route_to_one_in_rotation(
        httpd_factory, backend_factory):
    """The same jvmRoute on a new address: the departed member's route goes
    to its replacement, logged at info, and sessions follow it."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="20"))
    h.proxy_config = ("<Proxy balancer://cluster>\n"
                      "    ProxySet growth=4 stickysession=ROUTEID\n</Proxy>\n")
    start_receiver(h)
    ann = Announcer(udp)
    old, new, other = backend_factory("old"), backend_factory("new"), backend_factory("o")
    ann.announce(other.url)
    ann.announce(old.url, extra=[("route", "r1")])
    wait_member(h, old.url)
    ann.announce(old.url, state="leaving", extra=[("route", "r1")])
    wait_member(h, old.url, want_enabled=False)
    mark = h.log_size()
    ann.announce(new.url, extra=[("route", "r1")])
    h.wait_log(r"BCN00140: route r1 of %s, out of rotation, goes to %s in "
               r"balancer://cluster" % (re.escape(old.url), re.escape(new.url)),
               since=mark)
    wait_member(h, new.url)
    assert h.worker(new.url)["route"] == "r1"
    assert h.worker(old.url)["route"] == ""
    answers = {h.get("/", headers={"Cookie": "ROUTEID=x.r1"})[1] for _ in range(6)}
    assert answers == {"new"}
    # the old one back: the route is taken now
    mark = h.log_size()
    ann.announce(old.url, extra=[("route", "r1")])
    h.wait_log(r"BCN00093: route r1 already used by %s" % re.escape(new.url), since=mark)
    assert h.worker(new.url)["route"] == "r1"


@pytest.mark.parametrize("when", ["while running", "while stopped"])
def test_a_forgotten_member_is_not_restored(httpd_factory, backend_factory, when):
    """b, out of rotation, is forgotten once silent past Forget, at runtime
    or because httpd was down that long; live, silent only while httpd was
    down (less than Forget), is restored."""
    forget = 6
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(
        udp, timeout="1", extra=f"ProxyBeaconMaxSkew 1\nProxyBeaconForget {forget}\n"))
    start_receiver(h)
    ann = Announcer(udp)
    b, live = backend_factory("b"), backend_factory("live")
    with Heartbeat(ann, live.url, period=0.3):
        ann.announce(b.url)
        heard = time.time()
        wait_member(h, b.url)
        wait_member(h, b.url, want_enabled=False)
        if when == "while running":
            h.wait_log(r"BCN00089: forgot backend %s of balancer://cluster" % b.url,
                       timeout=forget + 5)
            h.stop()
        else:
            # b is silent for 4 s with httpd up, then for the rest of
            # Forget with httpd down: about 2.5 s, well inside live's Forget
            wait_for(lambda: time.time() - heard > 4, 6, "b's silence to grow")
            h.stop()
            wait_for(lambda: time.time() - heard > forget + 0.5, forget + 2,
                     "b's silence to pass Forget")
        mark = h.log_size()
        start_receiver(h)
        h.wait_log(r"BCN00011: restored 1 member\(s\) of balancer://cluster from "
                   r"the registry; forgot 1", since=mark)
        assert b.url not in [w["name"] for w in h.balancer_members()]
        wait_member(h, live.url)
