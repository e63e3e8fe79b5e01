# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Recycling growth slots at runtime: a slot of a member beacon took out of
rotation long ago is renamed in place for a new url (BCN00038).

What must hold: urls keep joining and serving however many come and go
(more than growth= over the balancer's life), with or without graceful
restarts; while clients fetch, no request reaches the address a slot had
before its rename (a trap listens there) and no request fails; the
children's descriptors do not grow with each rename; and a url whose slot
went to another joins again when it comes back, served by every child."""

import os
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest

from beacon_env import (Announcer, Heartbeat, Periodic, enabled, receiver_config,
                        start_receiver, wait_member)
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon

# Renames under client load; each takes about 6 s of a slot's quiet time,
# two slots cool in turn, so a cycle costs about 3.5 s. The sanitizer run
# (make check-asan-module) takes fewer.
RECYCLE_CYCLES = int(os.environ.get("BEACON_RECYCLE_CYCLES", "50"))
# Descriptors the proxy's children may gain between cycle 5 and the last
# (requests in flight at either sample, a connection pool's churn).
FD_SLACK = 20

RECYCLED_RE = r"BCN00038: recycled slot of (\S+) for %s in balancer://cluster\b"


# ---- helpers -------------------------------------------------------------------

class Client(Periodic):
    """Fetches / through the proxy in a loop; counts statuses and which
    backend answered (the body names it)."""

    def __init__(self, h, period=0.005):
        super().__init__(period)
        self.h = h
        self.lock = threading.Lock()
        self.statuses = {}
        self.bodies = {}

    def tick(self):
        try:
            status, body = self.h.get("/", timeout=10)
        except OSError as e:
            status, body = type(e).__name__, None
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status == 200:
                self.bodies[body] = self.bodies.get(body, 0) + 1

    def answered(self, name):
        with self.lock:
            return self.bodies.get(name, 0)

    def failures(self):
        with self.lock:
            return {s: n for s, n in self.statuses.items() if s != 200}


class Trap:
    """A plain TCP listener on an address no request may reach any more:
    it accepts, counts and closes every connection."""

    def __init__(self, port, host="127.0.0.1"):
        self.addr = (host, port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # the old backend's connections may linger in TIME_WAIT on this port
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

        def bound():
            try:
                self.sock.bind(self.addr)
                return True
            except OSError:
                return False
        wait_for(bound, 10, f"binding the trap on {host}:{port}", interval=0.05)
        self.sock.listen(128)
        self.sock.settimeout(0.1)
        self.accepted = []  # monotonic times
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted.append(time.monotonic())
            conn.close()

    @property
    def count(self):
        return len(self.accepted)

    def close(self):
        self.stopped.set()
        self.thread.join(5)
        self.sock.close()


def out_of_rotation(h, url):
    """True when url is disabled in the balancer, or no longer a name there."""
    for w in h.balancer_members():
        if w["name"] == url:
            return not enabled(w)
    return True


def wait_out_of_rotation(h, urls, timeout=15):
    wait_for(lambda: all(out_of_rotation(h, u) for u in urls), timeout,
             f"{len(urls)} member(s) out of rotation: {urls}", interval=0.1)


def wait_drained(h, url, timeout=10):
    """Until no request is in flight to url (httpd's busy count): a backend
    that leaves drains before it exits, or the requests elected to it just
    before it left rotation fail with it."""
    def idle():
        return all(w["busy"] == 0 for w in h.balancer_members() if w["name"] == url)
    wait_for(idle, timeout, f"{url} drained", interval=0.05)


def serve_each(h, names, timeout):
    """GETs / until every backend of names answered; any other answer
    (an error, a member that should be out of rotation) fails at once."""
    seen = set()

    def all_seen():
        status, body = h.get("/")
        assert status == 200 and body in names, \
            f"GET / answered {status} {body[:100]!r}; serving {sorted(names)}"
        seen.add(body)
        return seen >= set(names)
    wait_for(all_seen, timeout, f"answers from all of {sorted(names)}, seen {sorted(seen)}",
             interval=0.005)


def child_fds(h):
    """{child pid: open descriptors} for every child of the httpd parent."""
    fds = {}
    for pid in h.child_pids():
        try:
            fds[pid] = len(os.listdir(f"/proc/{pid}/fd"))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return fds


def recycles(h):
    return re.findall(r"BCN00038: recycled slot of (\S+) for (\S+) in balancer://cluster",
                      h.error_log())


def proxy(httpd_factory, growth, timeout):
    udp = free_port()
    h = httpd_factory(growth=growth, tail_config=receiver_config(udp, timeout=str(timeout)))
    start_receiver(h)
    return h, Announcer(udp)


# ---- 1. churn: more urls than slots, wave after wave ---------------------------

WAVES, PER_WAVE, GROWTH = 6, 5, 10


@pytest.mark.parametrize("restart", ["none", "graceful"])
def test_waves_of_new_backends_all_join_through_recycled_slots(
        httpd_factory, backend_factory, restart):
    """30 urls through 10 growth slots: waves of 5 join and serve, then go
    silent; from the third wave on, each url gets a slot of a wave that
    died before."""
    h, ann = proxy(httpd_factory, GROWTH, timeout=1)
    timings, all_urls = [], []
    for wave in range(WAVES):
        started = time.monotonic()
        backends = [backend_factory(f"w{wave}-{i}") for i in range(PER_WAVE)]
        urls = [b.url for b in backends]
        all_urls += urls
        with ExitStack() as beats:
            for u in urls:
                beats.enter_context(Heartbeat(ann, u, period=0.2))
            deadline = started + 40
            for u in urls:
                wait_member(h, u, timeout=max(1, deadline - time.monotonic()))
            serve_each(h, {b.name for b in backends}, timeout=20)
            members = h.balancer_members()
            assert len(members) <= GROWTH, [w["name"] for w in members]
        # the wave dies silently: no more heartbeats, backends gone
        for b in backends:
            b.stop()
        wait_out_of_rotation(h, urls)
        timings.append(round(time.monotonic() - started, 1))
        if restart == "graceful" and wave < WAVES - 1:
            h.graceful()

    done = recycles(h)
    expected = WAVES * PER_WAVE - GROWTH
    assert len(done) >= expected, \
        f"{len(done)} recycles logged, expected {expected}; wave seconds {timings}"
    # every url past the first GROWTH came in through a slot of an earlier
    # wave, never one of its own
    late = set(all_urls[GROWTH:])
    assert late <= {new for _, new in done}, sorted(late - {new for _, new in done})
    for old, new in done:
        assert all_urls.index(old) // PER_WAVE < all_urls.index(new) // PER_WAVE, (old, new)
    print(f"\nwaves ({restart}): seconds per wave {timings}, {len(done)} recycles")


# ---- 2. renames while clients fetch ----------------------------------------------

def test_recycling_under_client_load_never_reaches_an_old_address(
        httpd_factory, backend_factory):
    """A static member serves throughout; two growth slots take new urls in
    turn. After each rename a trap listens on the slot's old address: it
    must never see a connection, the client no failure, and the children
    must not gain descriptors cycle after cycle."""
    h, ann = proxy(httpd_factory, growth=3, timeout=2)
    # A request elected just before its member leaves rotation is declined
    # when it takes a connection (AH00940 "disabled connection") or at
    # connect time (AH01114, httpd's "worker is in error" check) and fails
    # over; httpd logs either at error level. The client's answers are the
    # measure.
    h.expect_errors("AH00940", "AH01114")
    static = backend_factory("static")
    traps = {}
    seq = iter(range(10_000))
    beats = ExitStack()  # stops every heartbeat, whatever happens

    def heartbeat(url):
        return beats.enter_context(Heartbeat(ann, url, period=0.3))

    def join():
        b = backend_factory(f"d{next(seq)}")
        hb = heartbeat(b.url)
        wait_member(h, b.url, timeout=20)
        return b, hb

    def retire(b, hb, how):
        hb.__exit__(None, None, None)
        if how == "leaving":
            ann.announce(b.url, state="leaving")
        wait_out_of_rotation(h, [b.url])
        wait_drained(h, b.url)
        b.stop()
        traps[b.url] = Trap(b.port)

    fd_samples = {}
    try:
        with beats:
            heartbeat(static.url)
            wait_member(h, static.url)
            # fill both growth slots; then one dynamic member is live and
            # the other cooling, and every new url takes the cooled slot
            first = join()
            second = join()
            with Client(h) as client:
                wait_for(lambda: client.answered(first[0].name)
                         and client.answered(second[0].name), 20,
                         "the first dynamic members to serve")
                retire(first[0], first[1], "leaving")
                live = [second]  # (backend, heartbeat) in rotation
                for cycle in range(RECYCLE_CYCLES):
                    how = "silent" if cycle % 4 == 3 else "leaving"
                    # the new url announces first and waits for a slot
                    b = backend_factory(f"d{next(seq)}")
                    mark = h.log_size()
                    hb = heartbeat(b.url)
                    prev_b, prev_hb = live.pop()
                    retire(prev_b, prev_hb, how)
                    m = h.wait_log(RECYCLED_RE % re.escape(b.url), timeout=40, since=mark)
                    old = m.group(1)
                    assert old in traps, f"cycle {cycle}: recycled {old}, not a retired url"
                    at_rename = traps[old].count
                    wait_member(h, b.url, timeout=20)
                    answered = client.answered(b.name)
                    wait_for(lambda: client.answered(b.name) > answered + 5, 20,
                             f"cycle {cycle}: {b.name} serving through the slot of {old}")
                    assert traps[old].count == 0, \
                        (f"cycle {cycle}: {traps[old].count} connection(s) to {old} "
                         f"after its slot went to {b.url} ({at_rename} before)")
                    assert not client.failures(), f"cycle {cycle}: {client.failures()}"
                    live.append((b, hb))
                    if cycle == 4:
                        fd_samples["cycle 5"] = child_fds(h)
                fd_samples["last"] = child_fds(h)
                # earlier traps listened through the cycles after theirs;
                # give the last one a few hundred requests too
                before = sum(client.bodies.values())
                wait_for(lambda: sum(client.bodies.values()) > before + 300, 30,
                         "requests after the last rename")
        hit = {u: t.count for u, t in traps.items() if t.count}
        assert not hit, f"connections to addresses whose slot was recycled: {hit}"
        assert not client.failures(), f"client saw failures: {client.failures()}"
        done = recycles(h)
        assert len(done) == RECYCLE_CYCLES, done
        assert static.name in client.bodies
    finally:
        for t in traps.values():
            t.close()

    early, last = fd_samples["cycle 5"], fd_samples["last"]
    common = sorted(set(early) & set(last))
    assert common, f"no child lived from cycle 5 to the last: {early} -> {last}"
    grown = sum(last[p] for p in common) - sum(early[p] for p in common)
    print(f"\nfds of children {common}: {[early[p] for p in common]} after cycle 5, "
          f"{[last[p] for p in common]} after cycle {RECYCLE_CYCLES}; client {client.statuses}")
    assert grown <= FD_SLACK, \
        f"children's descriptors grew by {grown}: {early} -> {last}"


# ---- 3. an old url comes back ------------------------------------------------------

def serve_many(h, names, min_requests, watch=None, timeout=45):
    """GETs / from 4 threads at once (so more than one child serves) until
    every backend of names answered and at least min_requests were made.
    With watch (a member url): also until every child that served anything
    since the start served watch too, and at least two did. Every answer
    must be 200 from one of names. Returns the pids that served watch."""
    start = len(h.access_log())
    answers = []
    lock = threading.Lock()

    def one(_):
        status, body = h.get("/")
        with lock:
            answers.append((status, body))

    def done():
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(one, range(20)))
        bad = [a for a in answers if a[0] != 200 or a[1] not in names]
        assert not bad, f"unexpected answers {bad[:5]}; serving {sorted(names)}"
        if {b for _, b in answers} < set(names) or len(answers) < min_requests:
            return False
        if watch is None:
            return True
        rows = h.access_log()[start:]
        served_any = {r["pid"] for r in rows}
        served_watch = {r["pid"] for r in rows if r["worker"] == watch}
        assert all(r["status"] == 200 for r in rows), rows
        return len(served_watch) >= 2 and served_watch == served_any and served_watch
    return wait_for(done, timeout,
                    f"answers from all of {sorted(names)}" +
                    (f" and from {watch} in every child" if watch else ""), interval=0.01)


def test_a_url_whose_slot_was_recycled_joins_again_and_every_child_serves_it(
        httpd_factory, backend_factory):
    """s, a and x fill the growth slots; a dies and b gets its slot; then x
    leaves and a comes back on its old address: it joins again (in x's
    slot, the only one that frees) and every child that serves requests
    sends some to it."""
    h, ann = proxy(httpd_factory, growth=3, timeout=2)
    s, a, x = backend_factory("s"), backend_factory("a"), backend_factory("x")
    with ExitStack() as beats:
        beats.enter_context(Heartbeat(ann, s.url, period=0.3))
        hb_a = beats.enter_context(Heartbeat(ann, a.url, period=0.3))
        hb_x = beats.enter_context(Heartbeat(ann, x.url, period=0.3))
        for u in (s.url, a.url, x.url):
            wait_member(h, u, timeout=20)
        serve_many(h, {"s", "a", "x"}, 60)

        # a dies silently; b gets its slot
        hb_a.__exit__(None, None, None)
        wait_out_of_rotation(h, [a.url])
        a.stop()
        b = backend_factory("b")
        mark = h.log_size()
        beats.enter_context(Heartbeat(ann, b.url, period=0.3))
        m = h.wait_log(RECYCLED_RE % re.escape(b.url), timeout=40, since=mark)
        assert m.group(1) == a.url
        wait_member(h, b.url, timeout=20)
        serve_many(h, {"s", "b", "x"}, 60)

        # x leaves, and a comes back on its old address
        hb_x.__exit__(None, None, None)
        ann.announce(x.url, state="leaving")
        wait_out_of_rotation(h, [x.url])
        x.stop()
        back = backend_factory("a-back", port=a.port)
        assert back.url == a.url
        mark = h.log_size()
        beats.enter_context(Heartbeat(ann, a.url, period=0.3))
        wait_member(h, a.url, timeout=40)
        joined = re.search(r"BCN00030: added backend {0} |BCN00031: re-adopted "
                           r"backend {0} |BCN00038: recycled slot of \S+ for {0} "
                           .format(re.escape(a.url)), h.error_log()[mark:])
        assert joined, "no line tells how the old url joined again"
        names = [w["name"] for w in h.balancer_members()]
        assert sorted(names) == sorted([s.url, b.url, a.url]), names
        pids = serve_many(h, {"s", "b", "a-back"}, 100, watch=a.url)
        print(f"\nreturned url joined by: {joined.group(0)}; "
              f"served by children {sorted(pids)}")
