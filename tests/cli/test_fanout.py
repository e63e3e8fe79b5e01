#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""beaconctl send's fan-out (issue 16): every A and AAAA address of each
--to name gets every announcement; names are looked up again every
interval.

Run by ctest like test_beaconctl.py (one entry per file):

    BEACONCTL=build/beaconctl /usr/bin/python3 -m pytest -q tests/cli/test_fanout.py

beaconctl gets name resolution of its own, leaving the machine's alone: it
runs in a mount namespace of its own (unshare -m, which needs root) where
a private hosts file is bind-mounted over /etc/hosts, and a private
nsswitch.conf ("hosts: files") over /etc/nsswitch.conf, so that a name
missing from the file is not asked of DNS, and a private resolv.conf: every
lookup stays on this machine. (The one test that wants a lookup to hang
sends the DNS query to a socket of its own on 127.0.0.5, which never
answers.) The test rewrites the hosts file in place (same inode: a rename
would leave the mount on the old file) and glibc reads it again at the
next lookup. The proxies are plain UDP sockets on one port at 127.0.0.2,
127.0.0.3, [::1] and 127.0.0.4; all traffic is loopback. Every wait polls
for a condition with a deadline; only the process a test started is
signalled, through its own handle.
"""

import errno
import os
import re
import select
import selectors
import signal
import socket
import subprocess
import threading
import time

import pytest

import beacon_wire as bw
from beaconctl import (BEACONCTL, HEX_SECRET, TIMEOUT, assert_one_line_error,
                       sign_body)

NAME = "tier.test"
TIER = ("127.0.0.2", "127.0.0.3", "::1")  # what NAME resolves to at first
EXTRA = "127.0.0.4"                        # added later, or a literal --to
INTERVAL = 1.0                             # seconds; --interval 1
SLACK = 1.0                                # seconds past an interval
KEEP_ROUNDS = 3                            # BEACON_FANOUT_KEEP_ROUNDS

# mount the files given as $0, $1 and $2, then exec the rest: beaconctl
MOUNT = ('mount --bind "$0" /etc/hosts && '
         'mount --bind "$1" /etc/nsswitch.conf && '
         'mount --bind "$2" /etc/resolv.conf && shift 2 && exec "$@"')
SILENT_DNS = "127.0.0.5"  # a test's nameserver that never answers


class Resolution:
    """The private hosts and nsswitch.conf files of one test, in
    directory."""

    def __init__(self, directory):
        self.hosts = os.path.join(directory, "hosts")
        self.nsswitch = os.path.join(directory, "nsswitch.conf")
        self.resolv = os.path.join(directory, "resolv.conf")
        self.use_dns(False)
        # one query, answered never: a lookup that asks it hangs 30 s
        with open(self.resolv, "w", encoding="ascii") as f:
            f.write(f"nameserver {SILENT_DNS}\noptions timeout:30 "
                    f"attempts:1\n")
        self.write(*TIER)

    def use_dns(self, dns):
        """Whether a name missing from the hosts file is asked of the
        nameserver (SILENT_DNS); set before beaconctl starts."""
        with open(self.nsswitch, "w", encoding="ascii") as f:
            f.write("hosts: files dns\n" if dns else "hosts: files\n")

    def write(self, *addrs):
        """NAME resolves to addrs from the next lookup on: the file is
        rewritten in place (truncated), never replaced."""
        with open(self.hosts, "w", encoding="ascii") as f:
            f.write("# private hosts file of a beaconctl test\n")
            f.write("127.0.0.1 localhost\n")
            for addr in addrs:
                f.write(f"{addr} {NAME}\n")

    def launcher(self):
        return ["unshare", "-m", "sh", "-c", MOUNT, self.hosts, self.nsswitch,
                self.resolv]


def fields(datagram):
    """The fields of a datagram received (str), by key."""
    return bw.fields(datagram.encode())


class Proxies:
    """A UDP socket on one port at each address; a thread files every
    datagram under the address it came to, with its arrival time."""

    ADDRS = TIER + (EXTRA,)

    def __init__(self):
        self.socks = self._bind()
        self.port = self.socks[self.ADDRS[0]].getsockname()[1]
        self.cond = threading.Condition()
        self.got = {a: [] for a in self.ADDRS}  # [(monotonic, datagram)]
        self.forged = []                        # any with a wrong mac
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _bind(self):
        # a free port at the first address, then the same at the others;
        # another port when one of them has it taken
        for _ in range(20):
            socks, port = {}, 0
            try:
                for addr in self.ADDRS:
                    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
                    socks[addr] = socket.socket(family, socket.SOCK_DGRAM)
                    socks[addr].bind((addr, port))
                    port = socks[addr].getsockname()[1]
                return socks
            except OSError as e:
                for s in socks.values():
                    s.close()
                if e.errno != errno.EADDRINUSE:
                    raise
        raise AssertionError("no port free at all of " + ", ".join(self.ADDRS))

    def _run(self):
        with selectors.DefaultSelector() as sel:
            for addr, s in self.socks.items():
                sel.register(s, selectors.EVENT_READ, addr)
            while not self.stopping.is_set():
                for key, _ in sel.select(timeout=0.1):
                    data = key.fileobj.recv(4096).decode("ascii", "replace")
                    self._file(key.data, data)

    def _file(self, addr, datagram):
        with self.cond:
            if sign_body(datagram.rsplit(" mac=", 1)[0]) != datagram:
                self.forged.append(datagram)
            self.got[addr].append((time.monotonic(), datagram))
            self.cond.notify_all()

    def close(self):
        self.stopping.set()
        self.thread.join(timeout=TIMEOUT)
        for s in self.socks.values():
            s.close()

    def target(self, host=NAME):
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    def since(self, addr, t):
        """The datagrams addr received after monotonic time t."""
        with self.cond:
            return [d for at, d in self.got[addr] if at >= t]

    def summary(self):
        return {a: [fields(d).get("seq", "?") + ("L" if "state=" in d else "")
                    for _, d in got] for a, got in self.got.items()}

    def wait(self, what, predicate, timeout):
        """Polls predicate() (under the lock, at every datagram) until it
        holds; fails after timeout seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{what}: not within {timeout} s; "
                                         f"got (seq per address): "
                                         f"{self.summary()}")
                self.cond.wait(min(left, 0.1))

    def wait_heard(self, addrs, since, timeout):
        """Each of addrs received a datagram after since."""
        self.wait(f"datagrams at {', '.join(addrs)}",
                  lambda: all(self.since(a, since) for a in addrs), timeout)

    def wait_leaving(self, addrs, since, count=1):
        """Each of addrs received count state=leaving after since (sent by
        a process that has exited: the datagrams are on their way)."""
        self.wait(f"{count} state=leaving at {', '.join(addrs)}", lambda: all(
            sum(" state=leaving " in d for d in self.since(a, since)) >= count
            for a in addrs), TIMEOUT)



# ---------------------------------------------------------------------------
# Every address a --to name resolves to (A and AAAA) gets each datagram,
# and the set follows the name's lookups.

@pytest.fixture(scope="module", autouse=True)
def private_resolution_works(tmp_path_factory):
    """Skips every test here where a private /etc/hosts cannot be had."""
    if os.geteuid() != 0:
        pytest.skip("needs root: a private /etc/hosts is bind-mounted in a "
                    "mount namespace (unshare -m)")
    # beaconctl itself tells what it resolves NAME to: glibc's answer
    # through APR's (which asks AI_ADDRCONFIG: no AAAA on a machine
    # without an IPv6 address besides ::1); port 9 on loopback, where
    # nobody listens
    probe = Resolution(tmp_path_factory.mktemp("probe"))
    try:
        r = subprocess.run(probe.launcher() + [
            BEACONCTL, "send", "--once", "--verbose", "--to", f"{NAME}:9",
            "--url", "http://127.0.0.1:8093"],
            env={**os.environ, "BEACON_SECRET": HEX_SECRET},
            capture_output=True, text=True, timeout=TIMEOUT)
    except OSError as e:
        pytest.skip(f"cannot run unshare: {e}")
    found = {line.split()[2] for line in r.stdout.splitlines()
             if line.startswith("sent to ")}
    want = {f"[{a}]:9" if ":" in a else f"{a}:9" for a in TIER}
    if r.returncode != 0 or found != want:
        pytest.skip(
            f"a private /etc/hosts (unshare -m, mount --bind) does not "
            f"give beaconctl {NAME} -> {', '.join(sorted(want))} here "
            f"(exit {r.returncode}, got {sorted(found)}): "
            f"{r.stderr.strip()}")


@pytest.fixture
def names(tmp_path):
    return Resolution(tmp_path)


@pytest.fixture
def proxies():
    p = Proxies()
    yield p
    p.close()


@pytest.fixture
def start(names, proxies, spawn):
    """start(*args, to=(NAME,)): beaconctl send --interval 1 to each of to
    (names or addresses, at the proxies' port); returns it with its start
    time."""
    def send(*args, to=(NAME,)):
        argv = ["send", "--interval", str(INTERVAL),
                "--url", "http://127.0.0.1:8093", "--host", "web-5"]
        for host in to:
            argv += ["--to", proxies.target(host)]
        started = time.monotonic()
        sender = spawn(argv + list(args), secret=HEX_SECRET,
                       launcher=names.launcher())
        return sender, started
    return send


def stop(sender):
    """SIGTERM, exit 0; returns its stderr lines."""
    sender.proc.send_signal(signal.SIGTERM)
    status = sender.wait()
    err = sender.stderr()  # read once: it is a pipe
    assert status == 0, err
    return err.splitlines()


def assert_all_signed(proxies):
    assert proxies.forged == []


def test_every_address_of_the_name_hears_within_2_s(start, proxies):
    sender, started = start()
    proxies.wait_heard(TIER, started, 2.0)
    # one datagram signed for all: the first is the same everywhere
    firsts = {proxies.since(a, started)[0] for a in TIER}
    assert len(firsts) == 1, firsts
    assert fields(firsts.pop())["seq"] == "0"
    assert proxies.since(EXTRA, started) == []
    assert stop(sender) == []
    assert_all_signed(proxies)


def test_an_address_added_to_the_name_hears_within_an_interval(start, names,
                                                               proxies):
    sender, started = start("--verbose")
    proxies.wait_heard(TIER, started, 2.0)
    added = time.monotonic()
    names.write(*TIER, EXTRA)
    proxies.wait_heard([EXTRA], added, INTERVAL + SLACK)
    sender.expect(rf"^sent to {EXTRA}:{proxies.port} "
                  rf"\({NAME}:{proxies.port}\): BEACON ")
    err = stop(sender)
    # --verbose: the set at start, and the set after the lookup
    port = proxies.port
    sets = [line for line in err if " addresses: " in line]
    assert len(sets) == 2, err
    for line, addrs in zip(sets, (TIER, TIER + (EXTRA,))):
        prefix = f"beaconctl: send: to {NAME}:{port}: {len(addrs)} addresses: "
        assert line.startswith(prefix), line
        assert (set(line[len(prefix):].split(", "))
                == {proxies.target(a) for a in addrs}), line
    assert_all_signed(proxies)


def test_an_address_removed_from_the_name_hears_no_more(start, names,
                                                        proxies):
    sender, started = start()
    proxies.wait_heard(TIER, started, 2.0)
    removed = time.monotonic()
    names.write("127.0.0.2", "::1")
    quiet_from = removed + INTERVAL + SLACK
    # two datagrams to the others after that: the sender went on
    proxies.wait(
        "two datagrams at 127.0.0.2 an interval after the change",
        lambda: len(proxies.since("127.0.0.2", quiet_from)) >= 2, TIMEOUT)
    assert proxies.since("127.0.0.3", quiet_from) == [], proxies.summary()
    assert stop(sender) == []
    assert proxies.since("127.0.0.3", quiet_from) == []
    assert_all_signed(proxies)


def test_sigterm_says_leaving_to_every_current_address(start, names,
                                                       proxies):
    sender, started = start()
    proxies.wait_heard(TIER, started, 2.0)
    changed = time.monotonic()
    # one lookup adds 127.0.0.4 and drops 127.0.0.3
    names.write("127.0.0.2", "::1", EXTRA)
    proxies.wait_heard([EXTRA], changed, INTERVAL + SLACK)
    assert stop(sender) == []
    proxies.wait_leaving(("127.0.0.2", "::1", EXTRA), started, count=4)
    leaving = {}
    for addr in ("127.0.0.2", "::1", EXTRA):
        got = proxies.since(addr, started)
        # said once, then repeated 3 times within the first second
        assert [fields(d).get("state") for d in got].count("leaving") == 4, got
        assert fields(got[-1]).get("state") == "leaving", got
        leaving[addr] = got[-1]
    assert len(set(leaving.values())) == 1, leaving
    assert "state=leaving" not in " ".join(proxies.since("127.0.0.3", started))
    assert_all_signed(proxies)


def test_an_address_named_twice_gets_each_datagram_once(start, proxies):
    sender, started = start(to=(NAME, "127.0.0.2"))
    proxies.wait("seq 3 at 127.0.0.2", lambda: any(
        fields(d)["seq"] == "3"
        for d in proxies.since("127.0.0.2", started)), TIMEOUT)
    assert stop(sender) == []
    proxies.wait_leaving(TIER, started)
    seqs = {a: [fields(d)["seq"] for d in proxies.since(a, started)]
            for a in TIER}
    assert len(seqs["127.0.0.2"]) == len(set(seqs["127.0.0.2"])), seqs
    # every datagram went to each address, the leaving one too
    assert seqs["127.0.0.2"] == seqs["127.0.0.3"], seqs
    assert seqs["127.0.0.2"] == seqs["::1"], seqs
    assert_all_signed(proxies)


def test_a_name_that_stops_resolving_keeps_its_set_3_intervals(start, names,
                                                               proxies):
    # 127.0.0.4, a literal, shows that the sender goes on meanwhile
    sender, started = start(to=(NAME, EXTRA))
    proxies.wait_heard(TIER + (EXTRA,), started, 2.0)
    gone = time.monotonic()
    names.write()
    # kept for 3 failed lookups, then dropped at the 4th: no datagram
    # to the set once that lookup is surely made
    quiet_from = gone + (KEEP_ROUNDS + 1) * INTERVAL + SLACK
    proxies.wait(
        "two datagrams at the literal after the set was dropped",
        lambda: len(proxies.since(EXTRA, quiet_from)) >= 2,
        quiet_from - time.monotonic() + TIMEOUT)
    for addr in TIER:
        kept = proxies.since(addr, gone)
        # the lookups run with the sends, an interval apart: 3 sends
        # after the 3 failed lookups, a 4th when one was made before
        # the first failure
        assert len(kept) in (KEEP_ROUNDS, KEEP_ROUNDS + 1), proxies.summary()
        assert proxies.since(addr, quiet_from) == []
    # and back: the lookup that finds it again brings it back at once
    back = time.monotonic()
    names.write(*TIER)
    proxies.wait_heard(TIER, back, INTERVAL + SLACK)
    err = stop(sender)
    port = proxies.port
    assert len(err) == 3, err
    assert re.search(rf"^beaconctl: send: to {NAME}:{port}: "
                     rf"cannot resolve \(.+\): keeping its 3 "
                     rf"addresses for up to 3 intervals$", err[0])
    assert err[1] == (f"beaconctl: send: to {NAME}:{port}: no address for 3 "
                      f"intervals; not sending to it until it resolves")
    assert err[2] == f"beaconctl: send: to {NAME}:{port}: sending again"
    assert_all_signed(proxies)


def test_a_lookup_that_hangs_delays_neither_sending_nor_exit(start, names,
                                                             proxies):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as dns:
        try:
            dns.bind((SILENT_DNS, 53))
        except OSError as e:
            pytest.skip(f"cannot bind {SILENT_DNS}:53: {e}")
        names.use_dns(True)
        sender, started = start()
        proxies.wait_heard(TIER, started, 2.0)
        # from the next lookup on, the name is asked of a nameserver
        # that never answers: the lookup thread hangs in getaddrinfo
        names.write()
        readable, _, _ = select.select([dns], [], [], INTERVAL + SLACK)
        assert readable, "no DNS query within an interval"
        stuck = time.monotonic()
        # the sending goes on meanwhile, to the set the name had
        proxies.wait(
            "two datagrams at 127.0.0.2 while the lookup hangs",
            lambda: len(proxies.since("127.0.0.2", stuck)) >= 2,
            2 * INTERVAL + SLACK)
        stopping = time.monotonic()
        assert stop(sender) == []
        # far sooner than the 30 s the lookup waits for its answer
        assert time.monotonic() - stopping < 3.0
        proxies.wait_leaving(TIER, stuck)
    assert_all_signed(proxies)


def test_once_with_more_than_64_addresses_sends_to_64(names, proxies):
    # 65 loopback addresses nobody listens on: a datagram to a closed
    # port of this machine is lost without error
    names.write(*[f"127.0.1.{i}" for i in range(1, 66)])
    r = subprocess.run(names.launcher() + [
        BEACONCTL, "send", "--once", "--verbose", "--to",
        proxies.target(), "--url", "http://127.0.0.1:8093"],
        env={**os.environ, "BEACON_SECRET": HEX_SECRET},
        capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    sent = [line for line in r.stdout.splitlines()
            if line.startswith("sent to ")]
    assert len(sent) == 64, r.stdout
    assert r.stderr.count("sending to the first 64 only") == 1, r.stderr
    assert (f"to {NAME}:{proxies.port}: resolves to 65 addresses; sending "
            f"to the first 64 only" in r.stderr)


def test_once_to_a_name_that_does_not_resolve_exits_1(names, proxies):
    names.write()
    r = subprocess.run(names.launcher() + [
        BEACONCTL, "send", "--once", "--to", proxies.target(),
        "--url", "http://127.0.0.1:8093"],
        env={**os.environ, "BEACON_SECRET": HEX_SECRET},
        capture_output=True, text=True, timeout=TIMEOUT)
    assert_one_line_error(r, status=1, must_contain=[
        f"to {NAME}:{proxies.port}: cannot resolve ("])
    assert "retrying" not in r.stderr
