# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Hostile and odd inputs, second round: signed announcements and
configurations that httpd cannot hold must be refused, never half-applied,
and no child of the proxy may crash on them."""

import http.client
import json
import re
import threading

import pytest

import beacon_wire as bw
from beacon_env import (SECRET as SECRET_, Announcer, make_proxy, receiver_config,
                        wait_member)
from httpd import free_port, wait_for
from beacon_env import sender_httpd

pytestmark = pytest.mark.beacon

# One child serves (MaxRequestWorkers = ThreadsPerChild): the child that
# owns the receiver serves every request too, so a worker it half-defined
# is met at once. ServerLimit 2 leaves room for a graceful restart.
ONE_CHILD = ("StartServers 1\nServerLimit 2\nThreadsPerChild 16\n"
             "MinSpareThreads 1\nMaxSpareThreads 16\nMaxRequestWorkers 16\n")


@pytest.mark.parametrize("host_len", [254, 256, 292])
def test_a_host_httpd_cannot_hold_is_refused_and_no_child_crashes(
        httpd_factory, backend_factory, host_len):
    h, ann = make_proxy(httpd_factory, extra_config=ONE_CHILD)
    live = backend_factory("live")
    ann.announce(live.url)
    wait_member(h, live.url)
    long_url = "http://" + "a" * host_len + ":8080"
    ann.announce(long_url)
    h.wait_log(r"dropped datagram from [^:]+:\d+: unacceptable url 'http://a{%d}:8080'"
               % host_len)
    for _ in range(20):
        assert h.get("/") == (200, "live")
    assert long_url not in [w["name"] for w in h.balancer_members()]
    assert "Segmentation fault" not in h.error_log()


def test_requests_in_flight_survive_a_graceful_restart_of_the_owner_child(
        httpd_factory, backend_factory):
    """The workers beacon adds must live as long as the child's
    configuration, as balancer-manager's do: the old owner's watchdog
    thread ends at a graceful restart while its request threads still use
    the worker, and the owner's own memory then goes back to the system
    (a segfault here; under make check-asan-module, a use-after-free
    report). Workers once came from that memory."""
    h, ann = make_proxy(httpd_factory, extra_config=ONE_CHILD)
    slow = backend_factory("slow")
    ann.announce(slow.url)
    wait_member(h, slow.url)
    results = []

    def fetch():
        try:
            results.append(h.get("/slow/1500"))
        except OSError as e:  # reported below, with the others
            results.append(repr(e))

    threads = [threading.Thread(target=fetch) for _ in range(6)]
    for t in threads:
        t.start()
    wait_for(lambda: len([l for l in slow.requests() if l.startswith("GET /slow/")]) == 6,
             10, "six requests in flight at the backend")
    h.graceful()
    for t in threads:
        t.join(15)
    assert results == [(200, "slow")] * 6, results
    ann.announce(slow.url)
    assert h.get("/") == (200, "slow")


@pytest.mark.parametrize("configured,announced", [
    ("{url}/", "{url}"),                                   # a trailing slash
    ("HTTP://127.0.0.1:{port}", "{url}"),                  # case
    ("http://[0:0::1]:{port}", "http://[::1]:{port}"),     # IPv6 spelling
])
def test_a_configured_member_spelled_differently_is_still_the_admins(
        httpd_factory, backend_factory, configured, announced):
    b = backend_factory("static")
    spelled = configured.format(url=b.url, port=b.port)
    h, ann = make_proxy(httpd_factory, members=(spelled,))
    url = announced.format(url=b.url, port=b.port)
    ann.announce(url)
    h.wait_log(r"BCN00032: member not managed by beacon: %s" % re.escape(url))
    assert len(h.balancer_members()) == 1, h.balancer_members()


def vhost(port, body):
    return (f"Listen 127.0.0.1:{port}\n<VirtualHost 127.0.0.1:{port}>\n"
            f"    ServerName v{port}.test\n{body}</VirtualHost>\n")


def vhost_receiver(port, udp, balancer="cluster", own_balancer=False):
    own = (f"    <Proxy balancer://{balancer}>\n        ProxySet growth=2\n"
           "    </Proxy>\n") if own_balancer else ""
    return vhost(port, own + "".join(
        f"    {line}\n" for line in receiver_config(udp, balancer=balancer).splitlines()))


def unworkable_configs():
    p1, p2, udp = free_port(), free_port(), free_port()
    return [
        ("two receivers on one udp port",
         receiver_config(udp) + vhost_receiver(p1, udp, own_balancer=True),
         f"ProxyBeaconListen: udp 127.0.0.1:{udp} is taken by the receiver of "),
        ("a receiver on every address and one on 127.0.0.1, one port",
         receiver_config(udp, listen=f":{udp}").replace(
             f"ProxyBeaconListen :{udp}", f"ProxyBeaconListen *:{udp}")
         + vhost_receiver(p1, udp, own_balancer=True),
         "is taken by the receiver of "),
        ("two receivers on one inherited port",
         vhost(p1, f"    ProxyBeaconListen\n    ProxyBeaconSecret {SECRET_}\n")
         + vhost(p1, f"    ServerAlias other.test\n    ProxyBeaconListen\n"
                     f"    ProxyBeaconSecret {SECRET_}\n").replace(
                         f"Listen 127.0.0.1:{p1}\n", ""),
         "is taken by the receiver of "),
        ("two virtual hosts managing the main server's balancer",
         vhost_receiver(p1, free_port()) + vhost_receiver(p2, free_port()),
         "ProxyBeaconBalancer: balancer://cluster has a receiver already ("),
        ("a timeout of more than a year", receiver_config(udp, timeout="31708801"),
         "ProxyBeaconTimeout: '31708801' is more than a year"),
        ("a max skew of more than a day", receiver_config(udp) + "ProxyBeaconMaxSkew 86401\n",
         "ProxyBeaconMaxSkew: '86401' is more than a day"),
        ("an interval of more than a day",
         f"ProxyBeaconAddress 127.0.0.1:{udp}\nProxyBeaconSecret {SECRET_}\n"
         "ProxyBeaconInterval 86401\n",
         "ProxyBeaconInterval: '86401' is more than a day"),
        ("the largest timeout that overflowed", receiver_config(udp, timeout="9200000000000"),
         "ProxyBeaconTimeout: '9200000000000' is more than a year"),
    ]


@pytest.mark.parametrize("case,config,message", unworkable_configs(),
                         ids=[c[0] for c in unworkable_configs()])
def test_configurations_that_cannot_work_fail_apache2_t(httpd_factory, case, config,
                                                         message):
    h = httpd_factory(tail_config=config)
    rc, out = h.check_config()
    assert rc != 0, f"{case}: apache2 -t passed:\n{out}"
    assert message in out, out
    assert len([l for l in out.splitlines() if message in l]) == 1, out


def test_virtual_hosts_with_balancers_of_their_own_may_share_the_name(httpd_factory):
    p1, p2 = free_port(), free_port()
    h = httpd_factory(tail_config=vhost_receiver(p1, free_port(), own_balancer=True)
                      + vhost_receiver(p2, free_port(), own_balancer=True))
    rc, out = h.check_config()
    assert rc == 0, out


def test_the_largest_bounds_are_accepted(httpd_factory):
    h = httpd_factory(tail_config=receiver_config(free_port(), timeout="31536000")
                      + "ProxyBeaconMaxSkew 86400\n")
    rc, out = h.check_config()
    assert rc == 0, out


STATUS = "<Location /beacon-status>\n    SetHandler beacon-status\n</Location>\n"


def status_json(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/beacon-status?json")
        resp = conn.getresponse()
        assert resp.status == 200
        return json.loads(resp.read())
    finally:
        conn.close()


def status_listens(port):
    return sorted(r["listen"] for r in status_json(port)["receivers"])


@pytest.mark.parametrize("scope", [None, "vhost", "server"])
def test_the_status_page_shows_the_receivers_of_the_virtual_host_that_answers(
        httpd_factory, scope):
    ports, udps = [free_port(), free_port()], [free_port(), free_port()]
    setting = f"    ProxyBeaconStatusScope {scope}\n" if scope else ""
    status = STATUS.replace("</Location>", f"{setting}</Location>")
    h = httpd_factory(tail_config=status + "".join(
        vhost_receiver(ports[i], udps[i], balancer=f"v{i}", own_balancer=True)
        for i in range(2)))
    h.proxypass_config = "ProxyPass /balancer-manager !\n"
    h.start()
    for udp in udps:
        h.wait_log(r"listening for beacons on udp 127\.0\.0\.1:%d " % udp, since=0)
    both = sorted(f"127.0.0.1:{u}" for u in udps)
    for port, udp in zip(ports, udps):
        want = both if scope == "server" else [f"127.0.0.1:{udp}"]
        assert status_listens(port) == want


def test_a_bad_status_scope_fails_apache2_t(httpd_factory):
    h = httpd_factory(tail_config="<Location /beacon-status>\n"
                      "    SetHandler beacon-status\n    ProxyBeaconStatusScope all\n"
                      "</Location>\n")
    rc, out = h.check_config()
    assert rc != 0 and "ProxyBeaconStatusScope: expects vhost" in out, out


@pytest.mark.parametrize("inline", [True, False])
def test_an_inline_secret_is_warned_about_once_when_mod_info_shows_the_config(
        httpd_factory, workdir, inline):
    secret = SECRET_
    if not inline:
        path = workdir / "beacon.secret"
        path.write_text(SECRET_ + "\n")
        path.chmod(0o600)
        secret = f"file:{path}"
    info = "LoadModule info_module /usr/lib/apache2/modules/mod_info.so\n"
    h = httpd_factory(extra_config=info,
                      tail_config=receiver_config(free_port(), secret=secret))
    rc, out = h.check_config()
    assert rc == 0, out
    assert out.count("BCN00082") == (1 if inline else 0), out
    h.start()
    h.wait_log(r"BCN00050: listening", since=0)
    warned = [l for l in h.error_log().splitlines() if "BCN00082" in l]
    assert len(warned) == (1 if inline else 0), warned
    if inline:
        assert "mod_info is loaded: /server-info?config shows it" in warned[0]
        assert SECRET_[4:] not in warned[0]


def two_services(httpd_factory):
    """(httpd, {service: udp}, {service: port}): two virtual-host receivers
    sharing one secret (inherited from the main server), for services a
    and b, each with its status page."""
    ports, udps = [free_port(), free_port()], {"a": free_port(), "b": free_port()}
    vhosts = ""
    for (svc, udp), port in zip(udps.items(), ports):
        vhosts += vhost(port, f"    <Proxy balancer://{svc}>\n        ProxySet growth=2\n"
                              f"    </Proxy>\n    ProxyPass / balancer://{svc}/\n"
                              f"    ProxyBeaconListen 127.0.0.1:{udp}\n"
                              f"    ProxyBeaconBalancer {svc}\n"
                              f"    ProxyBeaconService {svc}\n")
    h = httpd_factory(tail_config=STATUS + f"ProxyBeaconSecret {SECRET_}\n" + vhosts)
    h.proxypass_config = "ProxyPass /balancer-manager !\nProxyPass /beacon-status !\n"
    h.start()
    for udp in udps.values():
        h.wait_log(r"listening for beacons on udp 127\.0\.0\.1:%d " % udp, since=0)
    return h, udps, dict(zip(udps, ports))


def test_a_capture_for_one_service_is_not_accepted_by_another(httpd_factory,
                                                             backend_factory):
    h, udps, ports = two_services(httpd_factory)
    b = backend_factory("b")
    for_a = bw.announce(SECRET_, url=b.url, extra=[("svc", "a")])
    bw.send(for_a, ("127.0.0.1", udps["b"]))
    h.wait_log(r"127\.0\.0\.1:%d: dropped datagram from [^:]+:\d+: wrong service "
               r"\(svc=a\)" % udps["b"])
    bw.send(bw.announce(SECRET_, url=b.url), ("127.0.0.1", udps["b"]))  # no svc

    def dropped_at_b():
        [receiver] = status_json(ports["b"])["receivers"]
        return receiver["dropped"]["wrong_service"] == 2
    wait_for(dropped_at_b, 10, "two wrong_service drops at service b")
    bw.send(for_a, ("127.0.0.1", udps["a"]))
    h.wait_log(r"added backend %s to balancer://a" % b.url)
    assert "to balancer://b" not in h.error_log()


def test_a_sender_announces_its_service(httpd_factory, backend_factory):
    h, udps, _ = two_services(httpd_factory)
    sender = sender_httpd(httpd_factory, [f"127.0.0.1:{udps['b']}"])
    sender.tail_config += "ProxyBeaconService b\n"
    sender.start()
    h.wait_log(r"added backend http://127\.0\.0\.1:%d to balancer://b" % sender.port)


def test_a_receiver_without_a_service_ignores_svc(httpd_factory, backend_factory):
    h, ann = make_proxy(httpd_factory)
    b = backend_factory("b")
    ann.send(bw.announce(SECRET_, url=b.url, extra=[("svc", "shop")]))
    wait_member(h, b.url)


def test_a_bad_service_name_fails_apache2_t(httpd_factory):
    h = httpd_factory(tail_config=receiver_config(free_port())
                      + "ProxyBeaconService shop/eu\n")
    rc, out = h.check_config()
    assert rc != 0 and "ProxyBeaconService: 'shop/eu' is not a service name" in out, out


@pytest.mark.parametrize("url", ["balancer://cluster", "balancer://other",
                                 "ftp://127.0.0.1:2121", "gopher://127.0.0.1:70"])
def test_a_url_httpd_cannot_proxy_a_member_to_is_refused(httpd_factory, backend_factory,
                                                         url):
    h, ann = make_proxy(httpd_factory)
    live = backend_factory("live")
    ann.announce(live.url)
    wait_member(h, live.url)
    ann.announce(url)
    h.wait_log(r"dropped datagram from [^:]+:\d+: unacceptable url '%s'" % re.escape(url))
    assert [w["name"] for w in h.balancer_members()] == [live.url]
    assert h.get("/") == (200, "live")


@pytest.mark.parametrize("url,problem", [
    ("http://" + "a" * 256 + ":8080", "the host is longer than 253 bytes"),
    ("balancer://cluster", "is not one httpd proxies to a member"),
])
def test_a_sender_cannot_advertise_what_a_proxy_cannot_hold(httpd_factory, url, problem):
    h = httpd_factory(tail_config=f"ProxyBeaconAddress 127.0.0.1:{free_port()}\n"
                      f"ProxyBeaconSecret {SECRET_}\nProxyBeaconAdvertise {url}\n")
    rc, out = h.check_config()
    assert rc != 0 and "ProxyBeaconAdvertise: " in out and problem in out, out


def test_a_virtual_host_without_beacon_directives_takes_no_role(httpd_factory,
                                                                backend_factory):
    """httpd hands a virtual host without any of the module's directives the
    main server's configuration itself; the roles must not come with it."""
    udp = free_port()
    h = httpd_factory(tail_config=vhost(free_port(), "") + receiver_config(udp))
    h.start()
    h.wait_log(r"BCN00050: listening for beacons on udp 127\.0\.0\.1:%d " % udp, since=0)
    b = backend_factory("b")
    Announcer(udp).announce(b.url)
    wait_member(h, b.url)
    assert h.error_log().count("BCN00050") == 1


def test_a_virtual_host_without_beacon_directives_sends_nothing(httpd_factory):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(5)
        sender = sender_httpd(httpd_factory, ["127.0.0.1:%d" % rx.getsockname()[1]],
                              interval="200ms")
        sender.tail_config = vhost(free_port(), "") + sender.tail_config
        sender.start()
        seen = [bw.fields(rx.recv(4096)) for _ in range(8)]
    streams = {d["pid"] for d in seen}
    seqs = [int(d["seq"]) for d in seen]
    assert len(streams) == 1 and len(set(seqs)) == len(seqs), seen


def test_a_balancer_without_growth_slots_is_warned_about(httpd_factory):
    # ProxySet refuses growth=0; BalancerGrowth 0 (the default is 5) gives it
    h = httpd_factory(tail_config=receiver_config(free_port()))
    h.proxy_config = "BalancerGrowth 0\n<Proxy balancer://cluster>\n</Proxy>\n"
    rc, out = h.check_config()
    assert rc == 0, out
    warning = "balancer://cluster has no growth slots, so no announced backend can join it"
    assert out.count(warning) == 1, out
    h.start()
    h.wait_log(r"BCN00050: listening", since=0)
    assert h.error_log().count(warning) == 1
