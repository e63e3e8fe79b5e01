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
from beacon_env import (SECRET, enabled, make_proxy, receiver_config,
                        refused_by_apache2_t, sender_httpd, wait_member)
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon


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


def test_a_sender_announces_its_route_and_load_factor(httpd_factory):
    """ProxyBeaconRoute and ProxyBeaconLBFactor reach the proxy's member
    with the announcement that adds it, before its first request."""
    proxy, ann = make_proxy(httpd_factory)
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{ann.addr[1]}"],
                           extra="ProxyBeaconRoute web1\nProxyBeaconLBFactor 2.5\n")
    backend.start()
    member = wait_member(proxy, f"http://127.0.0.1:{backend.port}")
    assert (member["route"], member["loadfactor"]) == ("web1", "2.50")


def test_route_and_load_factor_are_in_every_announcement_of_their_server_only(
        httpd_factory, datagrams):
    """The leaving announcement says them too; a virtual host that is a
    sender of its own announces what it names, not the main server's."""
    other, vport = Datagrams(), free_port()
    try:
        backend = sender_httpd(
            httpd_factory, [datagrams.target], interval="30",
            extra=(f"ProxyBeaconRoute web1\nProxyBeaconLBFactor 2.5\n"
                   f"Listen 127.0.0.1:{vport}\n<VirtualHost 127.0.0.1:{vport}>\n"
                   f"    ProxyBeaconAddress {other.target}\n"
                   f"    ProxyBeaconAdvertise http://127.0.0.1:{vport}\n"
                   "</VirtualHost>\n"))
        backend.start()
        first = datagrams.until(lambda d: True, 10, "the main server's announcement")[-1]
        assert (first["route"], first["lbfactor"]) == ("web1", "2.5")
        vhost = other.until(lambda d: True, 10, "the virtual host's announcement")[-1]
        assert vhost["url"] == f"http://127.0.0.1:{vport}"
        assert "route" not in vhost and "lbfactor" not in vhost, vhost
        backend.stop()
        leaving = datagrams.until(lambda d: d.get("state") == "leaving", 5,
                                  "state=leaving at the stop")[-1]
        assert (leaving["route"], leaving["lbfactor"]) == ("web1", "2.5")
    finally:
        other.close()


SENDER = f"ProxyBeaconAddress 127.0.0.1:5556\nProxyBeaconSecret {SECRET}\n"
ANNOUNCED_ERRORS = [
    ("a route with a slash", SENDER + "ProxyBeaconRoute web/1\n",
     "ProxyBeaconRoute: 'web/1' is not a route (1 to 63 letters, digits, "
     "'.', '_' or '-')"),
    ("a route of 64 bytes", SENDER + f"ProxyBeaconRoute {'r' * 64}\n",
     f"ProxyBeaconRoute: '{'r' * 64}' is not a route"),
    ("a load factor below 1", SENDER + "ProxyBeaconLBFactor 0.5\n",
     "ProxyBeaconLBFactor: '0.5' is not a load factor (1 to 100 with at most "
     "two decimals"),
    ("a load factor above 100", SENDER + "ProxyBeaconLBFactor 101\n",
     "ProxyBeaconLBFactor: '101' is not a load factor"),
    ("a load factor with three decimals", SENDER + "ProxyBeaconLBFactor 2.505\n",
     "ProxyBeaconLBFactor: '2.505' is not a load factor"),
    ("a route in a receiver", receiver_config(5555) + "ProxyBeaconRoute web1\n",
     "ProxyBeaconRoute needs ProxyBeaconAddress in the same server (%s:%d)"),
    ("a load factor in a server without a role",
     f"ProxyBeaconSecret {SECRET}\nProxyBeaconLBFactor 2\n",
     "ProxyBeaconLBFactor needs ProxyBeaconAddress in the same server (%s:%d)"),
    ("a route in a virtual host of a sender: roles are not inherited",
     SENDER + "<VirtualHost 127.0.0.1:5557>\n    ProxyBeaconRoute web1\n"
     "</VirtualHost>\n",
     "ProxyBeaconRoute needs ProxyBeaconAddress in the same server (%s:%d)"),
]


@pytest.mark.parametrize("case,config,message", ANNOUNCED_ERRORS,
                         ids=[c[0] for c in ANNOUNCED_ERRORS])
def test_bad_route_and_load_factor_fail_apache2_t(httpd_factory, case, config, message):
    refused_by_apache2_t(httpd_factory, case, config, message)


def test_good_route_and_load_factor_pass_apache2_t(httpd_factory):
    h = httpd_factory(tail_config=SENDER + "ProxyBeaconRoute Node-2.eu_1\n"
                                           "ProxyBeaconLBFactor 99.99\n")
    assert h.check_config() == (0, "Syntax OK\n")


BEACONCTL = Path(__file__).resolve().parents[2] / "build" / "beaconctl"


class BeaconctlSend:
    """`beaconctl send` announcing url to ann's proxy every 0.5 s, with the
    secret in a file, as a context manager: on exit it is told to stop
    (SIGTERM), which it must answer with state=leaving and status 0."""

    def __init__(self, ann, url, workdir, *options):
        secret = workdir / "secret"
        secret.write_text(SECRET + "\n")
        secret.chmod(0o600)
        self.args = [str(BEACONCTL), "send", "--to", f"127.0.0.1:{ann.addr[1]}",
                     "--url", url, "--interval", "0.5", "--secret-file", str(secret),
                     *options]

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(10) == 0, self.proc.stderr.read()
        self.proc.stderr.close()


@pytest.mark.skipif(not BEACONCTL.exists(), reason="build/beaconctl is not built")
def test_beaconctl_send_joins_and_leaves_like_a_module_sender(httpd_factory,
                                                              backend_factory, workdir):
    proxy, ann = make_proxy(httpd_factory)
    b = backend_factory("cli")
    with BeaconctlSend(ann, b.url, workdir):
        wait_member(proxy, b.url)
        assert proxy.get("/") == (200, "cli")
    proxy.wait_log(r"backend leaving %s" % b.url)
    assert not enabled(proxy.worker(b.url))


@pytest.mark.skipif(not BEACONCTL.exists(), reason="build/beaconctl is not built")
def test_beaconctl_send_announces_route_and_load_factor(httpd_factory, backend_factory,
                                                        workdir):
    proxy, ann = make_proxy(httpd_factory)
    b = backend_factory("cli")
    with BeaconctlSend(ann, b.url, workdir, "--route", "cli-1", "--lbfactor", "7.25"):
        member = wait_member(proxy, b.url)
        assert (member["route"], member["loadfactor"]) == ("cli-1", "7.25")


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
