# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The receiver against the real apache2: announced backends become live
balancer members, silent ones leave rotation, and nothing else gets in.

Membership is read from balancer-manager, the way an operator would."""

import re

import pytest

import beacon_wire as bw
from beacon_env import (ONE_CHILD, SECRET, Announcer, Heartbeat, enabled,
                        fetch_until_each_answers, make_proxy, receiver_config,
                        start_receiver, wait_member)
from httpd import free_port, get_from, wait_for

pytestmark = pytest.mark.beacon


def test_three_backends_join_and_all_receive_requests(httpd_factory, backend_factory):
    h, ann = make_proxy(httpd_factory)
    backends = [backend_factory(f"b{i}") for i in range(3)]
    for b in backends:
        ann.announce(b.url)
    for b in backends:
        h.wait_log(r"BCN00030: added backend %s to balancer://cluster" % b.url)
        wait_member(h, b.url)
    fetch_until_each_answers(h, [b.name for b in backends])
    assert sorted(w["name"] for w in h.balancer_members()) == sorted(b.url for b in backends)


def test_under_prefork_backends_join_and_receive_requests(httpd_factory, backend_factory):
    h, ann = make_proxy(httpd_factory, mpm="prefork")
    backends = [backend_factory(f"p{i}") for i in range(2)]
    for b in backends:
        ann.announce(b.url)
    for b in backends:
        wait_member(h, b.url)
    fetch_until_each_answers(h, [b.name for b in backends])


def test_equal_forms_of_an_origin_are_one_member(httpd_factory, backend_factory):
    h, ann = make_proxy(httpd_factory)
    b = backend_factory("b")
    for form in (f"HTTP://127.0.0.1:{b.port}", f"http://127.0.0.1:{b.port}/",
                 f"http://127.0.0.1:{b.port}"):
        ann.announce(form)
    ann.announce("http://[0:0:0:0:0:0:0:1]:9")
    ann.announce("http://[::1]:9/")
    h.wait_log(r"added backend http://\[::1\]:9 ")
    # Stop the IPv6 member (nothing listens there) before any request.
    h.set_worker_status("cluster", "http://[::1]:9", S=1)
    assert sorted(w["name"] for w in h.balancer_members()) == \
        sorted([b.url, "http://[::1]:9"])
    fetch_until_each_answers(h, ["b"])


def drop_cases(url):
    """(reason fragment, datagram) for every drop the receiver can make
    before a member exists: each correctly signed unless the MAC is the point."""
    key, ts = SECRET, bw.now_usec()
    good = bw.sign([("url", url), ("ts", ts)], key)
    return [
        ("oversize datagram", bw.sign([("url", url), ("ts", ts), ("pad", "x" * 2048)], key)),
        ("embedded NUL", good[:10] + b"\0" + good[11:]),
        ("bad frame", b"BEACON  url=" + url.encode() + b" mac=0011223344556677"),
        ("mac mismatch", good[:-1] + (b"0" if good[-1:] != b"0" else b"1")),
        ("duplicate field", bw.sign([("url", url), ("ts", ts), ("ts", ts + 1)], key)),
        ("bad ts", bw.sign([("url", url), ("ts", "-5")], key)),
        ("stale ts", bw.sign([("url", url), ("ts", ts - 3_600_000_000)], key)),
        ("unacceptable url", bw.sign([("url", url + "/path"), ("ts", ts)], key)),
    ]


def test_every_drop_reason_is_logged_and_adds_nothing(httpd_factory, backend_factory):
    h, ann = make_proxy(httpd_factory)
    b = backend_factory("b")
    for reason, datagram in drop_cases(b.url):
        ann.send(datagram)
        h.wait_log(r"BCN00020: 127\.0\.0\.1:%d: dropped datagram from 127\.0\.0\.1:\d+: %s"
                   % (ann.addr[1], reason), since=0)
    assert h.balancer_members() == []
    # The url a peer sent is escaped, never written raw.
    assert "unacceptable url 'http://127.0.0.1:%d/path'" % b.port in h.error_log()

    first = ann.announce(b.url)
    wait_member(h, b.url)
    ann.announce(b.url, ts=ann.last_ts - 1)  # older than the one accepted
    h.wait_log(r"dropped datagram from [^:]+:\d+: replayed/reordered ts %s" % b.url)
    # the very same announcement again is a second copy: counted, no warning
    ann.send(first)
    h.wait_log(r"BCN00113: .*: dropped datagram from [^:]+:\d+: replayed/reordered "
               r"ts %s: a second copy of the announcement last accepted, the same ts "
               r"again" % b.url)
    # both say replayed/reordered ts; only the older ts is a warning
    lines = [line for line in h.error_log().splitlines()
             if "replayed/reordered ts %s" % b.url in line]
    assert [(":warn]" in line, "BCN00113" in line) for line in lines] == [
        (True, False), (False, True)], lines


def test_a_silent_member_is_evicted_gets_no_traffic_and_returns(httpd_factory,
                                                                  backend_factory):
    h, ann = make_proxy(httpd_factory, timeout="1")
    live, quiet = backend_factory("live"), backend_factory("quiet")
    with Heartbeat(ann, live.url):
        ann.announce(quiet.url)
        wait_member(h, quiet.url)
        wait_member(h, live.url)
        h.wait_log(r"BCN00035: evicted backend %s from balancer://cluster" % quiet.url)
        assert not enabled(h.worker(quiet.url))
        served = len(quiet.requests())
        for _ in range(10):
            assert h.get("/after-eviction") == (200, "live")
        assert len(quiet.requests()) == served
        assert enabled(h.worker(live.url)), "the announcing member stays in rotation"

        ann.announce(quiet.url)
        h.wait_log(r"BCN00035: re-enabled backend %s in balancer://cluster" % quiet.url)
        wait_member(h, quiet.url)
        fetch_until_each_answers(h, ["live", "quiet"])


def test_a_returning_member_the_proxy_saw_fail_is_retried_at_once(httpd_factory,
                                                                  backend_factory):
    """A request that meets a stopping backend's closed port puts the worker
    in the proxy's error state for its retry, 60 s by default. The backend's
    return is fresh evidence: it is back in rotation within seconds. (A
    second, live member keeps the balancer from forcing a recovery.)"""
    h, ann = make_proxy(httpd_factory)
    live, b = backend_factory("live"), backend_factory("b")
    with Heartbeat(ann, live.url):
        ann.announce(b.url)
        wait_member(h, b.url)
        fetch_until_each_answers(h, ["live", "b"])

        b.stop()
        h.expect_errors("AH00957", "AH00959", "AH01114")
        wait_for(lambda: h.get("/") == (200, "live") and "Err" in h.worker(b.url)["flags"],
                 10, "a request to meet the stopped backend and fail over")
        ann.announce(b.url, state="leaving")
        h.wait_log(r"BCN00036: backend leaving %s" % b.url)

        backend_factory("b", port=b.port)
        ann.announce(b.url)
        h.wait_log(r"BCN00035: re-enabled backend %s" % b.url)
        fetch_until_each_answers(h, ["live", "b"], timeout=5)
        assert "Err" not in h.worker(b.url)["flags"]


def test_replaying_a_dead_backends_last_datagram_does_not_re_enable_it(httpd_factory,
                                                                       backend_factory):
    h, ann = make_proxy(httpd_factory, timeout="500ms")
    b = backend_factory("b")
    last = ann.announce(b.url)
    wait_member(h, b.url)
    h.wait_log(r"evicted backend %s" % b.url)
    ann.send(last)
    h.wait_log(r"dropped datagram from [^:]+:\d+: replayed/reordered ts %s: a second "
               r"copy" % b.url)
    assert not enabled(h.worker(b.url))


def test_stopped_survives_any_number_of_evictions(httpd_factory, backend_factory):
    h, ann = make_proxy(httpd_factory, timeout="300ms")
    b = backend_factory("b")
    ann.announce(b.url)
    wait_member(h, b.url)
    assert "Stop" in h.set_worker_status("cluster", b.url, S=1)["flags"]
    for _ in range(2):
        h.wait_log(r"evicted backend %s" % b.url)
        ann.announce(b.url)
        h.wait_log(r"re-enabled backend %s" % b.url)
    flags = h.worker(b.url)["flags"]
    assert "Stop" in flags and "Dis" not in flags


def test_a_configured_balancer_member_is_left_alone(httpd_factory, backend_factory):
    b = backend_factory("static")
    h, ann = make_proxy(httpd_factory, timeout="300ms", members=(b.url,))
    ann.announce(b.url)
    h.wait_log(r"BCN00032: member not managed by beacon: %s" % b.url)
    ann.announce(b.url)
    h.wait_log(r"dropped datagram from [^:]+:\d+: member not managed by beacon %s" % b.url)
    assert [w["name"] for w in h.balancer_members()] == [b.url]
    h.set_worker_status("cluster", b.url, D=1)
    ann.announce(b.url)
    assert "Dis" in h.worker(b.url)["flags"], "beacon never re-enables a member it did not add"
    assert "evicted" not in h.error_log()


def test_exhausted_growth_adds_nothing_and_the_proxy_keeps_serving(httpd_factory,
                                                                   backend_factory):
    h, ann = make_proxy(httpd_factory, growth=1)
    h.expect_errors("BCN00037")
    first, second = backend_factory("first"), backend_factory("second")
    ann.announce(first.url)
    wait_member(h, first.url)
    ann.announce(second.url)
    h.wait_log(r"BCN00037: cannot add backend %s to balancer://cluster: no free slot"
               % second.url)
    for _ in range(5):
        assert h.get("/") == (200, "first")
    assert [w["name"] for w in h.balancer_members()] == [first.url]
    assert "added backend %s" % second.url not in h.error_log()


def test_without_a_balancer_the_receiver_only_logs(httpd_factory, backend_factory):
    h, ann = make_proxy(httpd_factory, balancer=None)
    assert "(log-only: no ProxyBeaconBalancer)" in h.error_log()
    b = backend_factory("b")
    ann.announce(b.url, host="web-1")
    h.wait_log(r"BCN00040: 127\.0\.0\.1:\d+: received: BEACON url=%s host=web-1 " % b.url)
    assert h.balancer_members() == []


def test_listen_without_argument_uses_the_servers_own_address_and_port(httpd_factory,
                                                                       backend_factory):
    h = httpd_factory(tail_config=receiver_config(0, listen=""))
    start_receiver(h)
    h.wait_log(r"listening for beacons on udp 127\.0\.0\.1:%d " % h.port, since=0)
    b = backend_factory("b")
    Announcer(h.port).announce(b.url)
    wait_member(h, b.url)


def test_an_ipv6_listener_receives(httpd_factory, backend_factory):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, listen=f"[::1]:{udp}"))
    start_receiver(h)
    h.wait_log(r"listening for beacons on udp \[::1\]:%d " % udp, since=0)
    b = backend_factory("b")
    Announcer(udp, host="::1").announce(b.url)
    wait_member(h, b.url)


def test_beacon_members_fail_over_like_static_ones(httpd_factory, backend_factory):
    """An empty balancer has no failover attempts; beacon sets them."""
    h, ann = make_proxy(httpd_factory)
    h.expect_errors("AH00957", "AH00959", "AH01114", "AH10159")
    live = backend_factory("live")
    dead = f"http://127.0.0.1:{free_port()}"
    ann.announce(dead)
    ann.announce(live.url)
    wait_member(h, dead)
    wait_member(h, live.url)
    for _ in range(6):
        assert h.get("/") == (200, "live")


def test_balancer_persist_restores_workers_without_overwriting_them(httpd_factory,
                                                                    backend_factory):
    udp = free_port()
    h = httpd_factory(extra_config="BalancerPersist On",
                      tail_config=receiver_config(udp))
    start_receiver(h)
    ann = Announcer(udp)
    a, b = backend_factory("a"), backend_factory("b")
    ann.announce(a.url)
    wait_member(h, a.url)
    h.graceful()
    h.wait_log(r"took over 1 existing member\(s\) of balancer://cluster")
    assert [w["name"] for w in h.balancer_members()] == [a.url]
    ann.announce(b.url)
    wait_member(h, b.url)
    names = sorted(w["name"] for w in h.balancer_members())
    assert names == sorted([a.url, b.url]), "the restored worker must keep its slot"
    ann.announce(a.url)
    fetch_until_each_answers(h, ["a", "b"])


def proxypass_vhost(vport):
    """A virtual host on vport with its own ProxyPass to the main server's
    balancer://cluster, which it inherits."""
    return (f"Listen 127.0.0.1:{vport}\n<VirtualHost 127.0.0.1:{vport}>\n"
            "    ServerName vhost.test\n    ProxyPass / balancer://cluster/\n"
            "</VirtualHost>\n")


def test_a_vhost_with_its_own_proxypass_reaches_new_members_in_every_child(
        httpd_factory, backend_factory):
    vport = free_port()
    udp = free_port()
    h = httpd_factory(tail_config=proxypass_vhost(vport) + receiver_config(udp))
    start_receiver(h)
    b = backend_factory("b")
    Announcer(udp).announce(b.url)
    wait_member(h, b.url)
    for _ in range(30):  # KeepAlive Off: connections spread over the children
        assert get_from(vport) == (200, "b")


def test_a_vhost_of_the_owner_child_reaches_every_member(httpd_factory, backend_factory):
    """httpd makes a balancer's member list with room for 5, and a virtual
    host's copy of an inherited balancer shares that list. The owner child
    must add its members to the shared list, not to a bigger one of its
    own, or the vhost there stops at the first 5 (the sixth never answers)."""
    vport = free_port()
    udp = free_port()
    h = httpd_factory(growth=8, extra_config=ONE_CHILD,
                      tail_config=proxypass_vhost(vport) + receiver_config(udp))
    start_receiver(h)
    ann = Announcer(udp)
    backends = [backend_factory(f"b{i}") for i in range(7)]
    for b in backends:
        ann.announce(b.url)
        wait_member(h, b.url)
    seen = set()

    def all_seen():
        status, body = get_from(vport)
        if status == 200:
            seen.add(body)
        return seen >= {b.name for b in backends}
    try:
        wait_for(all_seen, 10, "every member to answer through the vhost")
    except AssertionError:
        pytest.fail(f"through the vhost only {sorted(seen)} of 7 members answered")


CONFIG_ERRORS = [
    ("the secret is missing", receiver_config(5555, secret=None),
     "ProxyBeaconSecret is required"),
    ("the secret is short", receiver_config(5555, secret="too-short"),
     "ProxyBeaconSecret: a passphrase secret must be at least 16 bytes"),
    ("a hex secret has 31 digits", receiver_config(5555, secret="hex:" + "a" * 31),
     "ProxyBeaconSecret: a hex: secret must have exactly 32 hex digits"),
    ("the balancer does not exist", receiver_config(5555, balancer="nosuch"),
     "balancer://nosuch is not defined"),
    ("a timeout is not an interval", receiver_config(5555, timeout="3x"),
     "ProxyBeaconTimeout: '3x' is not a"),
    ("the listen port is not a port", receiver_config(5555, listen="127.0.0.1:99999"),
     "ProxyBeaconListen: '127.0.0.1:99999' is not [address][:port]"),
    ("listen is given twice", receiver_config(5555) + "ProxyBeaconListen :5556\n",
     "ProxyBeaconListen: may only be given once per server"),
    ("a server both receives and sends",
     receiver_config(5555) + "ProxyBeaconAddress 127.0.0.1:5556\n",
     "ProxyBeaconListen and ProxyBeaconAddress cannot both be set in one server"),
    ("an advertised url has a path",
     f"ProxyBeaconAddress 127.0.0.1:5556\nProxyBeaconSecret {SECRET}\n"
     "ProxyBeaconAdvertise http://10.0.0.5:8080/app\n",
     "ProxyBeaconAdvertise: 'http://10.0.0.5:8080/app': a path is not allowed"),
    ("a balancer without a listener", "ProxyBeaconBalancer cluster\n",
     "ProxyBeaconBalancer needs ProxyBeaconListen in the same server"),
]


@pytest.mark.parametrize("case,config,message", CONFIG_ERRORS,
                         ids=[c[0] for c in CONFIG_ERRORS])
def test_config_errors_fail_apache2_t(httpd_factory, case, config, message):
    h = httpd_factory(tail_config=config)
    rc, out = h.check_config()
    assert rc != 0, f"{case}: apache2 -t passed:\n{out}"
    assert message in out, out


def test_a_receiver_without_mod_proxy_fails_apache2_t(httpd_factory):
    h = httpd_factory(tail_config=receiver_config(5555, balancer=None))
    dropped = ("LoadModule proxy_module", "LoadModule proxy_http_module",
               "LoadModule proxy_balancer_module", "LoadModule lbmethod_")
    no_proxy = [line for line in h.modules_config().splitlines()
                if not line.startswith(dropped)]
    assert any("proxy_beacon_module" in line for line in no_proxy)
    h.modules_config = lambda: "\n".join(no_proxy) + "\n"
    h.proxy_config = h.proxypass_config = h.manager_config = ""
    rc, out = h.check_config()
    assert rc != 0
    assert "mod_proxy is required by ProxyBeaconListen" in out, out


def test_virtual_hosts_are_receivers_each_with_its_own_balancer_and_secret(
        httpd_factory, backend_factory):
    """One watchdog thread serves both; a datagram signed for one vhost's
    secret is a forgery to the other."""
    secrets = ["hex:" + "1" * 32, "hex:" + "2" * 32]
    ports, udps, vhosts = [free_port(), free_port()], [free_port(), free_port()], ""
    for i in range(2):
        vhosts += (f"Listen 127.0.0.1:{ports[i]}\n<VirtualHost 127.0.0.1:{ports[i]}>\n"
                   f"    ServerName v{i}.test\n"
                   f"    <Proxy balancer://v{i}>\n        ProxySet growth=2\n    </Proxy>\n"
                   f"    ProxyPass / balancer://v{i}/\n"
                   + "".join("    " + line + "\n" for line in receiver_config(
                       udps[i], balancer=f"v{i}", secret=secrets[i]).splitlines())
                   + "</VirtualHost>\n")
    h = httpd_factory(tail_config=vhosts)
    # main-server ProxyPass lines come first in every vhost: keep none
    h.proxypass_config = "ProxyPass /balancer-manager !\n"
    h.start()
    for i in range(2):
        h.wait_log(r"listening for beacons on udp 127\.0\.0\.1:%d for balancer://v%d"
                   % (udps[i], i), since=0)
    b0, b1 = backend_factory("b0"), backend_factory("b1")
    Announcer(udps[0], secret=secrets[1]).announce(b0.url)
    h.wait_log(r"127\.0\.0\.1:%d: dropped datagram from [^:]+:\d+: mac mismatch" % udps[0])
    Announcer(udps[0], secret=secrets[0]).announce(b0.url)
    Announcer(udps[1], secret=secrets[1]).announce(b1.url)
    h.wait_log(r"added backend %s to balancer://v0" % b0.url, since=0)
    h.wait_log(r"added backend %s to balancer://v1" % b1.url, since=0)
    for i, name in enumerate(["b0", "b1"]):
        assert get_from(ports[i]) == (200, name)
    threads = set(re.findall(r"\[pid (\d+):tid (\d+)\] BCN00050", h.error_log()))
    assert len(threads) == 1, f"one watchdog thread serves both: {threads}"


def test_a_receiver_without_mod_proxy_balancer_fails_apache2_t(httpd_factory):
    h = httpd_factory(tail_config=receiver_config(5555, balancer=None))
    dropped = ("LoadModule proxy_balancer_module", "LoadModule lbmethod_")
    kept = [line for line in h.modules_config().splitlines()
            if not line.startswith(dropped)]
    h.modules_config = lambda: "\n".join(kept) + "\n"
    h.proxy_config = h.manager_config = ""
    h.proxypass_config = ""
    rc, out = h.check_config()
    assert rc != 0
    assert "mod_proxy_balancer is required by ProxyBeaconListen" in out, out
