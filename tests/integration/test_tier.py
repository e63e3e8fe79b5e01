# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A tier of proxies behind one name: a sender announces to every address
the name resolves to, follows the name as the tier grows and shrinks, and
says leaving to all of them when it stops (issue 16).

The tier: receivers on 127.0.0.2, 127.0.0.3 and [::1], all on one UDP port,
and a name, tier.test, that only the sender knows, from a hosts file of
its own (private_hosts: needs root, skipped otherwise). The tests change
the tier by rewriting that file."""

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import private_hosts
from beacon_env import (SECRET, enabled, receiver_config, start_receiver,
                        wait_member)
from httpd import free_port, logged_at, wait_for
from test_sender import BEACONCTL as BUILT_BEACONCTL
from beacon_env import sender_httpd
from test_status import STATUS_PAGE, status_json

pytestmark = pytest.mark.beacon

NAME = "tier.test"
TIER = ("127.0.0.2", "127.0.0.3", "::1")
FOURTH = "127.0.0.4"
INTERVAL = 1    # the sender's ProxyBeaconInterval, seconds
TIMEOUT = 3     # the receivers' ProxyBeaconTimeout, seconds
# $BEACONCTL: another build of beaconctl than build/beaconctl
BEACONCTL = Path(os.environ.get("BEACONCTL") or BUILT_BEACONCTL)


def hostport(addr, port):
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def tier_port():
    """A port that free_port() gave and UDP can bind on every address a
    receiver of these tests listens on."""
    for _ in range(20):
        port = free_port()
        try:
            for addr in TIER + (FOURTH,):
                family = socket.AF_INET6 if ":" in addr else socket.AF_INET
                with socket.socket(family, socket.SOCK_DGRAM) as s:
                    s.bind((addr, port))
        except OSError:
            continue
        return port
    raise AssertionError(f"no UDP port free on all of {TIER + (FOURTH,)}")


class Tier:
    """Receivers on one UDP port, one per address, and the sender's hosts
    file naming them: NAME resolves to the addresses of `resolve`."""

    def __init__(self, httpd_factory, hosts):
        self.factory, self.hosts = httpd_factory, hosts
        self.port = tier_port()
        self.target = f"{NAME}:{self.port}"
        self.proxies = {addr: self.add_proxy(addr) for addr in TIER}
        self.resolve(TIER)

    def add_proxy(self, addr):
        h = self.factory(tail_config=STATUS_PAGE + receiver_config(
            self.port, timeout=str(TIMEOUT), listen=hostport(addr, self.port)))
        h.proxypass_config = "ProxyPass /beacon-status !\n" + h.proxypass_config
        return start_receiver(h)

    def resolve(self, addrs):
        """From the next lookup on, NAME resolves to addrs."""
        self.hosts.set({NAME: list(addrs)})

    def sender(self, targets=None):
        """The module's sender (a backend apache2) announcing to targets,
        by default NAME; its /beacon-status as test_status.py has it."""
        h = sender_httpd(self.factory, targets or [self.target], interval=str(INTERVAL))
        # the sender loads no mod_authz_host: loopback-only by its Listen
        h.tail_config += STATUS_PAGE.replace("Require ip 127.0.0.1 ::1",
                                             "Require all granted")
        h.launcher = self.hosts.launcher()
        return h

    def joined(self, url, proxies=None):
        for p in (proxies or self.proxies).values():
            wait_member(p, url)


@pytest.fixture
def tier(httpd_factory, workdir):
    why = private_hosts.usable()
    if why:
        pytest.skip(why)
    return Tier(httpd_factory, private_hosts.HostsFile(workdir / "hosts"))


def backend_url(h):
    return f"http://127.0.0.1:{h.port}"


def left(deadline):
    """Seconds until a time.monotonic() deadline, for one bounded poll."""
    return round(max(0.0, deadline - time.monotonic()), 2)


def destinations(backend, cond, what):
    """The sender's "destinations" in its /beacon-status?json, polled
    until cond(destinations) holds; the last seen in the failure."""
    last = []

    def check():
        last[:] = [status_json(backend)["senders"][0].get("destinations")]
        return last[0] if last[0] is not None and cond(last[0]) else None
    try:
        return wait_for(check, 5, what)
    except AssertionError as e:
        raise AssertionError(f"{e}; last seen: {last}") from None


def test_every_proxy_of_the_name_adds_the_member_within_2s_of_the_start(tier):
    backend = tier.sender()
    url = backend_url(backend)
    deadline = time.monotonic() + 2
    backend.start()
    for addr, p in tier.proxies.items():
        try:
            wait_member(p, url, timeout=left(deadline))
        except AssertionError as e:
            raise AssertionError(f"proxy on {addr}: {e}") from None


def test_an_address_added_to_the_name_gets_the_member_within_one_interval(tier):
    backend = tier.sender().start()
    url = backend_url(backend)
    tier.joined(url)
    fourth = tier.add_proxy(FOURTH)
    tier.resolve(TIER + (FOURTH,))
    wait_member(fourth, url, timeout=INTERVAL + 1)


def test_an_address_removed_from_the_name_is_evicted_there_only(tier):
    backend = tier.sender().start()
    url = backend_url(backend)
    tier.joined(url)
    gone = "127.0.0.3"
    removed = time.time()
    tier.resolve([a for a in TIER if a != gone])
    # the set in use may be one lookup old: two more announcements at most
    m = tier.proxies[gone].wait_log(r"BCN00035: evicted backend %s " % re.escape(url),
                                    timeout=TIMEOUT + 2 * INTERVAL + 2)
    assert not enabled(tier.proxies[gone].worker(url))
    assert "backend leaving" not in tier.proxies[gone].error_log()
    for addr, p in tier.proxies.items():
        if addr != gone:
            assert enabled(p.worker(url)), f"proxy on {addr}"
            assert "evicted backend" not in p.error_log(), f"proxy on {addr}"
    # and not before the timeout of its last announcement
    assert logged_at(m) - removed >= TIMEOUT - INTERVAL


def test_stopping_the_sender_disables_the_member_on_every_proxy_at_once(tier):
    backend = tier.sender().start()
    url = backend_url(backend)
    tier.joined(url)
    for p in tier.proxies.values():
        p.mark_log()
    deadline = time.monotonic() + TIMEOUT / 2  # well before any lease lapses
    backend.stop()
    for addr, p in tier.proxies.items():
        try:
            p.wait_log(r"BCN00036: backend leaving %s$" % re.escape(url),
                       timeout=left(deadline))
        except AssertionError as e:
            raise AssertionError(f"proxy on {addr}: {e}") from None
        assert not enabled(p.worker(url)), f"proxy on {addr}"
        assert "evicted backend" not in p.error_log(), f"proxy on {addr}"


def test_the_status_lists_the_name_and_what_each_address_was_sent(tier):
    backend = tier.sender().start()
    want = sorted(hostport(a, tier.port) for a in TIER)

    def all_sent(dests):
        addrs = dests[0]["addresses"] if len(dests) == 1 else []
        return (sorted(a["address"] for a in addrs) == want
                and all(a["sent"] > 0 for a in addrs))
    [dest] = destinations(backend, all_sent, f"sent > 0 to each of {want}")
    assert {k: dest[k] for k in ("name", "state", "literal", "lookup_failures", "cut")} \
        == {"name": tier.target, "state": "resolved", "literal": False,
            "lookup_failures": 0, "cut": 0}
    for a in dest["addresses"]:
        assert (a["errors"], a["duplicate"]) == (0, False), a


def test_an_address_named_twice_gets_each_announcement_once(tier):
    shared = hostport("127.0.0.2", tier.port)
    backend = tier.sender([tier.target, shared]).start()
    url = backend_url(backend)
    proxy = tier.proxies["127.0.0.2"]

    def member_seq():
        rx = status_json(proxy)["receivers"][0]
        seqs = [m["seq"] for m in rx["members"] if m["url"] == url]
        return rx if seqs and seqs[0] >= 3 else None
    # seq 3 arrived: so had seq 0 to 2, and any second copy of them
    rx = wait_for(member_seq, 4 * INTERVAL + 5, "the fourth announcement (seq 3)")
    assert rx["dropped"]["replayed_ts"] == 0, rx["dropped"]
    assert all(n == 0 for n in rx["dropped"].values()), rx["dropped"]

    dests = destinations(backend, lambda d: len(d) == 2 and d[1]["addresses"],
                         "both names listed")
    assert [(d["name"], d["literal"]) for d in dests] == [(tier.target, False),
                                                         (shared, True)]
    first = {a["address"]: a["duplicate"] for a in dests[0]["addresses"]}
    assert first == {hostport(a, tier.port): False for a in TIER}
    assert [(a["address"], a["duplicate"]) for a in dests[1]["addresses"]] \
        == [(shared, True)]


@pytest.mark.skipif(not BEACONCTL.exists(), reason=f"{BEACONCTL} is not built")
def test_beaconctl_send_reaches_every_address_of_a_name_and_leaves_them_all(
        tier, backend_factory, workdir):
    b = backend_factory("cli")
    secret = workdir / "secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    proc = subprocess.Popen(tier.hosts.launcher()
                            + [str(BEACONCTL), "send", "--to", tier.target, "--url", b.url,
                               "--interval", str(INTERVAL), "--secret-file", str(secret)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        tier.joined(b.url)
        for p in tier.proxies.values():
            p.mark_log()
        deadline = time.monotonic() + TIMEOUT / 2
        proc.send_signal(signal.SIGTERM)  # the launcher exec'd: this is beaconctl
        assert proc.wait(10) == 0, proc.stderr.read()
        for addr, p in tier.proxies.items():
            try:
                p.wait_log(r"BCN00036: backend leaving %s$" % re.escape(b.url),
                           timeout=left(deadline))
            except AssertionError as e:
                raise AssertionError(f"proxy on {addr}: {e}") from None
            assert not enabled(p.worker(b.url)), f"proxy on {addr}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stderr.close()


def test_a_proxy_at_two_addresses_of_the_name_counts_the_second_copy_quietly(
        tier, httpd_factory):
    """A proxy listening on every address, reached at two addresses of one
    name (as a dual-stack proxy is, through its A and AAAA records), gets
    each announcement twice. The second copy is dropped as replayed_ts and
    counted, but it is not a warning: it is the same announcement, not a
    replay of an older one."""
    port = tier_port()
    proxy = httpd_factory(tail_config=STATUS_PAGE + receiver_config(
        port, timeout=str(TIMEOUT), listen=f"0.0.0.0:{port}"))
    proxy.proxypass_config = "ProxyPass /beacon-status !\n" + proxy.proxypass_config
    start_receiver(proxy)
    tier.hosts.set({NAME: list(TIER), "both.test": ["127.0.0.6", "127.0.0.7"]})
    backend = tier.sender([f"both.test:{port}"]).start()
    url = backend_url(backend)

    def seen_twice():
        rx = status_json(proxy)["receivers"][0]
        seqs = [m["seq"] for m in rx["members"] if m["url"] == url]
        return rx if seqs and seqs[0] >= 3 and rx["dropped"]["replayed_ts"] >= 3 else None
    rx = wait_for(seen_twice, 4 * INTERVAL + 5, "seq 3 and three second copies")
    assert rx["events"]["added"] == 1
    warned = [line for line in proxy.error_log().splitlines()
              if ":warn]" in line and "replayed/reordered ts" in line]
    assert warned == []
    # an older announcement, replayed, is still worth a warning
    assert enabled(proxy.worker(url))
