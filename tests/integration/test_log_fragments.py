# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The seed's log fragments: operators grep for them, so each fragment of the
first README's Troubleshooting table (commit 21e3757, "README: the manual")
must still be in the line it names. Each is provoked against the real
apache2 and grepped in its error log (or apache2 -t's output); the few no
test can provoke are listed with the reason."""

import re
import socket

import pytest

import beacon_wire as bw
from beacon_env import (SECRET, Announcer, receiver_config, sender_httpd, start_receiver,
                        wait_member)
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon

# The "Log fragment" column of the seed's table (git show 21e3757:README.md),
# as written there. Its "... X" rows continue the row above: a drop reason
# after "dropped datagram from PEER: ". URL, ADDR, NAME, PEER, HOST, PORT
# and N stand for what the line names.
SEED_FRAGMENTS = [
    "listening for beacons on udp ADDR",
    "(log-only: no ProxyBeaconBalancer)",
    "cannot listen for beacons on udp ADDR; retrying in N s",
    "added backend URL to balancer://NAME",
    "re-adopted backend URL",
    "evicted backend URL",
    "re-enabled backend URL",
    "backend leaving URL",
    "took over N existing member(s)",
    "restored N member(s) of balancer://NAME from the registry",
    "dropped datagram from PEER: oversize datagram",
    "... embedded NUL",
    "... bad frame",
    "... mac mismatch",
    "... duplicate field",
    "... bad ts",
    "... stale ts",
    "... unacceptable url 'URL'",
    "... replayed/reordered ts URL",
    "... member table full URL",
    "member not managed by beacon: URL",
    "cannot add backend URL to balancer://NAME: no free slot",
    "balancer add not confirmed for backend URL",
    "cannot add backend URL",
    "cannot define worker",
    "cannot share worker",
    "cannot initialize worker",
    "cannot change backend URL ... it is gone or not beacon's",
    "member registry full",
    "is now configured in balancer://NAME; beacon no longer manages it",
    "cannot restore URL",
    "forgot N silent non-member record(s)",
    "heartbeat without url from host=...",
    "ProxyBeaconTimeout N ms is shorter than a watchdog hand-off",
    "ProxyBeaconAdvertise is not set",
    "cannot send beacon to HOST:PORT",
    "cannot format an announcement",
    "mod_watchdog cannot run the beacon receiver with this MPM: mod_proxy_beacon is INACTIVE",
    "mod_watchdog cannot run the beacon sender with this MPM",
    "mod_slotmem_shm is required by ProxyBeaconListen",
    "mod_watchdog is required by ...",
    "cannot create the member registry",
    "cannot create shared memory for the beacon status",
    "balancer://NAME has no shared memory yet",
    "no port given and none to inherit",
    "receive failed",
    "cannot bind udp ADDR yet; retrying",
]

# What no test here can bring about, and why.
CANNOT_PROVOKE = {
    "balancer add not confirmed for backend URL":
        "httpd would have to lose a worker it has just shared: no input does that",
    "cannot define worker": "httpd's ap_proxy_define_worker fails only without memory",
    "cannot share worker": "httpd's ap_proxy_share_worker fails only on a slot it lacks",
    "cannot initialize worker": "httpd's ap_proxy_initialize_worker fails only on "
                                "system resources (mutexes, pools)",
    "cannot change backend URL ... it is gone or not beacon's":
        "a race with httpd removing a member, which balancers never do",
    "member registry full":
        "the registry has 256 entries, more than all growth slots of the "
        "balancers a test can run in its time (100 each)",
    "cannot format an announcement":
        "the host name is the system's (gethostname): a test would need a UTS "
        "namespace of its own",
    "mod_watchdog cannot run the beacon receiver with this MPM: mod_proxy_beacon is INACTIVE":
        "every MPM of Debian's apache2 runs watchdogs",
    "mod_watchdog cannot run the beacon sender with this MPM":
        "every MPM of Debian's apache2 runs watchdogs",
    "mod_watchdog is required by ...": "mod_watchdog is compiled into Debian's apache2",
    "cannot create the member registry": "shared memory runs out only with system limits",
    "cannot create shared memory for the beacon status":
        "shared memory runs out only with system limits",
    "balancer://NAME has no shared memory yet":
        "mod_proxy_balancer missing is refused at apache2 -t before",
    "receive failed": "the kernel reports no error on a healthy UDP socket",
    "cannot bind udp ADDR yet; retrying":
        "a race of the old and new owner at a restart, not reproducible at will",
}

PLACEHOLDERS = {"URL": r"\S+", "ADDR": r"\S+", "NAME": r"[^\s:;]+", "PEER": r"\S+",
                "HOST": r"[^\s:]+", "PORT": r"\d+", "N": r"\d+"}
DROP = "dropped datagram from PEER: "


def fragment_regex(fragment):
    """The regex of a seed fragment: its text, its placeholders any value."""
    if fragment.startswith("... "):
        fragment = DROP + fragment[4:]
    out = []
    for token in re.split(r"(\.\.\.|\b(?:URL|ADDR|NAME|PEER|HOST|PORT|N)\b)", fragment):
        out.append(".*" if token == "..." else PLACEHOLDERS.get(token) or re.escape(token))
    return re.compile("".join(out))


def missing(fragments, text):
    """The fragments no line of text holds."""
    lines = text.splitlines()
    return [f for f in fragments if not any(fragment_regex(f).search(line) for line in lines)]


def test_the_seed_table_is_whole():
    """Every fragment is provoked below or said impossible, once."""
    provoked = [f for frags in SCENARIO_FRAGMENTS.values() for f in frags]
    assert sorted(provoked + list(CANNOT_PROVOKE)) == sorted(SEED_FRAGMENTS)


def test_the_regexes_match_what_they_name_and_no_more():
    assert fragment_regex("... mac mismatch").search(
        "r: dropped datagram from 127.0.0.1:5: mac mismatch")
    assert not fragment_regex("... mac mismatch").search("mac mismatch")
    assert fragment_regex("took over N existing member(s)").search("took over 2 existing member(s)")
    assert not fragment_regex("took over N existing member(s)").search("took over 2 member(s)")


# ---- the scenarios -------------------------------------------------------------

def raw(fields, secret=SECRET):
    return bw.sign(fields, secret)


def datagrams(httpd_factory, backend_factory):
    """One proxy: every drop reason, membership from join to eviction."""
    static = backend_factory("static")
    udp = free_port()
    h = httpd_factory(growth=1, members=[static.url], tail_config=receiver_config(
        udp, timeout="1", extra="ProxyBeaconMaxSkew 1\n"))
    h.expect_errors("BCN00037")  # no free slot
    start_receiver(h)
    ann = Announcer(udp)
    b, other = backend_factory("b"), backend_factory("other")
    ann.announce(b.url)
    wait_member(h, b.url)
    ann.send(b"x" * 3000)
    ann.send(b"BEACON url=http://a\0b:1 mac=0")
    ann.send(b"hello")
    ann.send(bw.announce("hex:" + "ff" * 16, url=b.url))
    ann.send(raw([("url", b.url), ("url", b.url), ("ts", bw.now_usec())]))
    ann.send(raw([("url", b.url), ("ts", "soon")]))
    ann.announce(b.url, ts=bw.now_usec() - 60_000_000)
    ann.announce("http://127.0.0.1:1/a/path")
    last = ann.announce(b.url)
    ann.announce(b.url, ts=ann.last_ts - 1)  # older than the last accepted
    ann.send(last)                           # the last accepted, once more
    ann.announce(static.url)
    ann.announce(None)                       # a heartbeat
    ann.announce(other.url)                  # growth=1: no slot for it
    h.wait_log(r"no free slot")
    ann.announce(b.url, state="leaving")
    h.wait_log(r"backend leaving")
    ann.announce(b.url)
    h.wait_log(r"re-enabled backend")
    h.wait_log(r"evicted backend", timeout=10)
    for i in range(257):
        ann.announce(f"http://127.0.0.1:{20000 + i}")
    h.wait_log(r"member table full")

    # every record, b's too, released after 2 x MaxSkew of silence; then
    # b announcing again is re-adopted (announcing sooner keeps its record)
    def forgotten():
        return sum(int(n) for n in re.findall(r"forgot (\d+) silent non-member",
                                              h.error_log()))
    wait_for(lambda: forgotten() == 256, 20, "all 256 records forgotten")
    ann.announce(b.url)
    h.wait_log(r"re-adopted backend")
    return h.error_log()


def restarts(httpd_factory, backend_factory):
    """Restarts: take-over, restore, a member the config now names, one that
    finds no slot."""
    b1, b2 = backend_factory("b1"), backend_factory("b2")
    udp = free_port()
    h = httpd_factory(growth=2, tail_config=receiver_config(udp))
    start_receiver(h)
    ann = Announcer(udp)
    for b in (b1, b2):
        ann.announce(b.url)
        wait_member(h, b.url)
    mark = h.log_size()
    h.graceful()
    h.wait_log(r"took over \d+ existing member", since=mark)
    h.wait_log(r"restored \d+ member", since=mark)
    mark = h.log_size()
    # b1 configured now, and no growth slot left for b2
    h.proxy_config = ("BalancerGrowth 0\n<Proxy balancer://cluster>\n"
                      f"    BalancerMember {b1.url}\n</Proxy>\n")
    h.expect_errors("BCN00009")  # cannot restore: no slot
    h.write_config()
    h.graceful()
    h.wait_log(r"no longer manages it", since=mark)
    h.wait_log(r"cannot restore", since=mark)
    return h.error_log()


def configs(httpd_factory, backend_factory):
    """Configurations: log-only, a port taken, missing modules, senders."""
    out = []
    log_only = httpd_factory(tail_config=receiver_config(free_port(), balancer=None))
    start_receiver(log_only)
    out.append(log_only.error_log())

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        h = httpd_factory(tail_config=receiver_config(taken.getsockname()[1]))
        h.expect_errors("BCN00052")  # cannot listen
        h.start()
        h.wait_log(r"cannot listen for beacons")
        out.append(h.error_log())
        h.stop()

    short = httpd_factory(tail_config=receiver_config(free_port(), timeout="2"))
    out.append(short.check_config()[1])

    no_shm = httpd_factory(tail_config=receiver_config(free_port()))
    base = no_shm.modules_config
    no_shm.modules_config = lambda: base().replace("LoadModule slotmem_shm", "#")
    out.append(no_shm.check_config()[1])

    no_port = httpd_factory(tail_config="<VirtualHost 127.0.0.1>\n"
                            + receiver_config(0, listen="127.0.0.1") + "</VirtualHost>\n")
    out.append(no_port.check_config()[1])

    quiet = sender_httpd(httpd_factory, [f"127.0.0.1:{free_port()}"], advertise=False)
    quiet.start()
    quiet.wait_log(r"ProxyBeaconAdvertise is not set")
    out.append(quiet.error_log())

    lost = sender_httpd(httpd_factory, ["nonexistent.invalid:9"])
    lost.expect_errors("BCN00101", "BCN00102", "BCN00054")
    lost.start()
    lost.wait_log(r"cannot send beacon to", timeout=15)
    out.append(lost.error_log())
    return "\n".join(out)


SCENARIOS = {"datagrams": datagrams, "restarts": restarts, "configs": configs}
SCENARIO_FRAGMENTS = {
    "datagrams": [
        "listening for beacons on udp ADDR", "added backend URL to balancer://NAME",
        "re-adopted backend URL", "evicted backend URL", "re-enabled backend URL",
        "backend leaving URL", "dropped datagram from PEER: oversize datagram",
        "... embedded NUL", "... bad frame", "... mac mismatch", "... duplicate field",
        "... bad ts", "... stale ts", "... unacceptable url 'URL'",
        "... replayed/reordered ts URL", "... member table full URL",
        "member not managed by beacon: URL",
        "cannot add backend URL to balancer://NAME: no free slot",
        "cannot add backend URL", "forgot N silent non-member record(s)",
        "heartbeat without url from host=...",
        "ProxyBeaconTimeout N ms is shorter than a watchdog hand-off",
    ],
    "restarts": [
        "took over N existing member(s)",
        "restored N member(s) of balancer://NAME from the registry",
        "is now configured in balancer://NAME; beacon no longer manages it",
        "cannot restore URL",
    ],
    "configs": [
        "(log-only: no ProxyBeaconBalancer)",
        "cannot listen for beacons on udp ADDR; retrying in N s",
        "mod_slotmem_shm is required by ProxyBeaconListen",
        "no port given and none to inherit",
        "ProxyBeaconAdvertise is not set",
        "cannot send beacon to HOST:PORT",
    ],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_seed_fragment_is_in_the_line_it_names(httpd_factory, backend_factory, scenario):
    text = SCENARIOS[scenario](httpd_factory, backend_factory)
    assert missing(SCENARIO_FRAGMENTS[scenario], text) == [], text[-3000:]


def test_a_second_copy_of_the_last_announcement_says_replayed_reordered_ts(
        httpd_factory, backend_factory):
    """The seed's "a stale/duplicate datagram" row: the exact duplicate of
    the announcement last accepted is dropped as replayed/reordered ts too,
    and its line says so (and why), not only "a second copy"."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    last = ann.announce(b.url)
    wait_member(h, b.url)
    ann.send(last)
    line = h.wait_log(r"BCN00113: [^\n]*")
    assert fragment_regex("... replayed/reordered ts URL").search(line.group(0)), line.group(0)
    assert b.url in line.group(0) and "the same ts again" in line.group(0)
