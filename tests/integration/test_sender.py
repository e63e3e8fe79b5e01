# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The module as sender: a backend apache2 with four lines of config joins
the proxies it names, and leaves rotation the moment it stops."""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import beacon_wire as bw
from beacon_env import SECRET, enabled, make_proxy, wait_member
from httpd import wait_for

pytestmark = pytest.mark.beacon


def sender_httpd(httpd_factory, targets, advertise=True, interval="1", mpm="event"):
    """A backend apache2 that loads no proxy module at all, only ours."""
    h = httpd_factory(mpm=mpm)
    lines = [line for line in h.modules_config().splitlines()
             if line.startswith(("LoadModule mpm_", "LoadModule authz_core",
                                 "LoadModule proxy_beacon"))]
    h.modules_config = lambda: "\n".join(lines) + "\n"
    h.proxy_config = h.proxypass_config = h.manager_config = ""
    h.tail_config = (f"ProxyBeaconAddress {' '.join(targets)}\n"
                     + (f"ProxyBeaconAdvertise http://127.0.0.1:{h.port}\n" if advertise else "")
                     + f"ProxyBeaconInterval {interval}\n"
                     + f"ProxyBeaconSecret {SECRET}\n")
    (h.dir / "htdocs" / "index.html").write_text(f"backend {h.port}")
    return h


def test_a_sender_joins_within_one_interval_and_leaves_when_it_stops(httpd_factory):
    proxy, ann = make_proxy(httpd_factory)  # no timeout: only leaving disables
    backend = sender_httpd(httpd_factory, [f"udp://127.0.0.1:{ann.addr[1]}"],
                           interval="10")
    url = f"http://127.0.0.1:{backend.port}"
    started = time.monotonic()
    backend.start()
    wait_member(proxy, url, timeout=10)
    assert time.monotonic() - started < 10, "the first announcement goes out at start-up"
    assert proxy.get("/index.html") == (200, f"backend {backend.port}")

    backend.stop()
    proxy.wait_log(r"BCN00036: backend leaving %s" % url)
    assert not enabled(proxy.worker(url))


def test_a_graceful_stop_says_leaving_while_requests_are_still_in_flight(httpd_factory):
    """state=leaving goes out when the stop begins, not when the last request
    is done: by then the backend's port already refuses new connections."""
    proxy, ann = make_proxy(httpd_factory)
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{ann.addr[1]}"], interval="30")
    url = f"http://127.0.0.1:{backend.port}"
    backend.start()
    wait_member(proxy, url)

    with socket.create_connection(("127.0.0.1", backend.port), timeout=10) as held:
        held.sendall(b"GET /index.html HTTP/1.1\r\nHost: held\r\n")  # not finished
        wait_for(lambda: a_child_holds_a_connection(backend), 5, "a backend child to accept")
        os.kill(backend.pid, signal.SIGWINCH)  # graceful-stop
        proxy.wait_log(r"BCN00036: backend leaving %s" % url, timeout=5)
        assert backend.running(), "the backend waits for the request in flight"

        held.sendall(b"Connection: close\r\n\r\n")
        answer = held.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"backend %d" % backend.port)
    wait_for(lambda: not backend.running(), 10, "the backend to finish its graceful stop")


def a_child_holds_a_connection(h):
    """True once one of h's children has accepted a connection on h's port:
    an established socket with that local port whose inode is one of the
    child's open files (a connection still in the backlog has no inode)."""
    accepted = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if int(f[1].split(":")[1], 16) == h.port and f[3] == "01" and f[9] != "0":
            accepted.add(f"socket:[{f[9]}]")
    for pid in h.child_pids():
        try:
            fds = Path(f"/proc/{pid}/fd").iterdir()
            if any(os.readlink(fd) in accepted for fd in fds):
                return True
        except OSError:
            pass
    return False


def test_a_sender_announces_to_every_proxy_it_names(httpd_factory):
    (p1, a1), (p2, a2) = make_proxy(httpd_factory), make_proxy(httpd_factory)
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{a1.addr[1]}",
                                           f"127.0.0.1:{a2.addr[1]}"])
    backend.start()
    url = f"http://127.0.0.1:{backend.port}"
    wait_member(p1, url)
    wait_member(p2, url)


def test_a_sender_keeps_announcing_every_interval(httpd_factory):
    proxy, ann = make_proxy(httpd_factory, timeout="1500ms")
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{ann.addr[1]}"], interval="300ms")
    backend.start()
    url = f"http://127.0.0.1:{backend.port}"
    wait_member(proxy, url)
    # Longer than the timeout: only regular announcements keep it in.
    deadline = time.monotonic() + 3
    wait_for(lambda: time.monotonic() > deadline or not enabled(proxy.worker(url)),
             5, "3 s of membership")
    assert enabled(proxy.worker(url))
    assert "evicted backend" not in proxy.error_log()


def test_a_sender_without_advertise_says_it_sends_heartbeats_only(httpd_factory):
    proxy, ann = make_proxy(httpd_factory)
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{ann.addr[1]}"], advertise=False)
    backend.start()
    backend.wait_log(r"BCN00104: ProxyBeaconAdvertise is not set .*heartbeats only",
                     since=0)
    proxy.wait_log(r"BCN00041: 127\.0\.0\.1:%d: heartbeat without url from host=\S+ "
                   r"pid=\d+" % ann.addr[1])
    assert proxy.balancer_members() == []


def test_a_child_retired_while_its_siblings_serve_is_no_departure(httpd_factory,
                                                                   datagrams):
    """MaxConnectionsPerChild and idle reaping stop one child gracefully, as
    a graceful stop stops them all; only the siblings tell which. When the
    child holding the sender retires alone the backend still serves: no
    leaving, and the sibling that takes the sender over announces."""
    limit = 3
    backend = sender_httpd(httpd_factory, [datagrams.target], interval="30")
    # two children or more, each retired after `limit` connections, then replaced
    backend.extra_config += ("StartServers 2\nMinSpareThreads 50\nMaxSpareThreads 75\n"
                             f"ThreadsPerChild 25\nMaxConnectionsPerChild {limit}\n")
    backend.start()
    owner = int(datagrams.until(lambda d: True, 10, "the first announcement")[-1]["pid"])

    # One connection at a time (no keep-alive: one request each), counted
    # per child from the access log, start()'s probe included; a child's
    # last one retires it, and the next waits for its replacement so that
    # siblings never retire together.
    for _ in range(60):
        before = len(backend.access_log())
        assert backend.get("/index.html")[0] == 200
        log = wait_for(lambda: backend.access_log()[before:] and backend.access_log(),
                       5, "the access log")
        pid = log[before]["pid"]
        if sum(1 for r in log if r["pid"] == pid) == limit:
            wait_for(lambda: pid not in backend.child_pids()
                     and len(backend.child_pids()) >= 2, 10, f"child {pid} replaced")
            if pid == owner:
                break
    else:
        pytest.fail("60 connections, and the sender's child never retired")

    seen = datagrams.until(lambda d: int(d["pid"]) != owner, 20,
                           "a sibling to take the sender over")
    assert [d for d in seen if d.get("state") == "leaving"] == []
    backend.wait_log(r"\[pid %d:tid \d+\] BCN00106: this child retires while its "
                     r"siblings serve" % owner, since=0)


BEACONCTL = Path(__file__).resolve().parents[2] / "build" / "beaconctl"


@pytest.mark.skipif(not BEACONCTL.exists(), reason="build/beaconctl is not built")
def test_beaconctl_send_joins_and_leaves_like_a_module_sender(httpd_factory,
                                                              backend_factory, workdir):
    proxy, ann = make_proxy(httpd_factory)
    b = backend_factory("cli")
    secret = workdir / "secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    sender = subprocess.Popen([str(BEACONCTL), "send", "--to", f"127.0.0.1:{ann.addr[1]}",
                               "--url", b.url, "--interval", "0.5",
                               "--secret-file", str(secret)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_member(proxy, b.url)
        assert proxy.get("/") == (200, "cli")
    finally:
        sender.send_signal(signal.SIGTERM)
        assert sender.wait(10) == 0, sender.stderr.read()
    proxy.wait_log(r"backend leaving %s" % b.url)
    assert not enabled(proxy.worker(b.url))


class Datagrams:
    """A UDP socket on 127.0.0.1 standing in for a proxy: it reads back what
    a sender under test announces, each datagram as a dict of its fields."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.target = "127.0.0.1:%d" % self.sock.getsockname()[1]

    def close(self):
        self.sock.close()

    def until(self, cond, timeout, what):
        """Every datagram read until one satisfies cond, that one last."""
        seen, deadline = [], time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; "
                                     f"read {seen}")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            seen.append(bw.fields(data))
            if cond(seen[-1]):
                return seen


@pytest.fixture
def datagrams():
    d = Datagrams()
    yield d
    d.close()


@pytest.mark.parametrize("mpm", ["event", "prefork"])
@pytest.mark.parametrize("restart_signal", [signal.SIGUSR1, signal.SIGHUP],
                         ids=["graceful", "restart"])
def test_a_restart_is_no_departure_but_a_stop_is(httpd_factory, datagrams,
                                                  restart_signal, mpm):
    """Log rotation restarts whole fleets in the same minute, and the
    listeners stay open through a restart: the old generation must not say
    leaving, or every backend would leave rotation at once. A stop must.

    prefork's children stop in their signal handlers, event's from their
    main thread (or, when told to stop before child_init, in a handler:
    this test once caught a child deadlocked there on the allocator's lock)."""
    backend = sender_httpd(httpd_factory, [datagrams.target], interval="30", mpm=mpm)
    backend.start()
    old_pid = datagrams.until(lambda d: True, 10, "the first announcement")[-1]["pid"]

    mark = backend.log_size()
    os.kill(backend.pid, restart_signal)
    backend.wait_log(r"AH00489:|AH00163:", since=mark)  # resuming normal operations
    # the new generation's second announcement comes a second after its
    # first, long after the old generation was told to stop
    seen = datagrams.until(lambda d: d["pid"] != old_pid and d["seq"] == "1", 10,
                           "the new generation's first two announcements")
    assert [d for d in seen if d.get("state") == "leaving"] == []

    backend.stop()
    datagrams.until(lambda d: d.get("state") == "leaving", 5, "state=leaving at the stop")
