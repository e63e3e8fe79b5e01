# Licensed under the Apache License, Version 2.0; see LICENSE.
"""One listener, many applications (wire format 1.2): one receiver feeds a
balancer per service, each bound to its service name and a key of its own.
A member is a (service, url) pair; a datagram is verified with its
service's keys only and goes to that service's balancer. Backends also
announce draining (httpd's N flag) and standby (H)."""

import collections
import json
import re

import pytest

import beacon_wire as bw
from beacon_env import SECRET, Announcer, Heartbeat, enabled, restart, start_receiver
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon

SHOP_KEY = "hex:ffeeddccbbaa99887766554433221100"
API_KEY = "hex:0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def services_proxy(httpd_factory, timeout="20", balancers=None, extra="",
                   sticky=False, **kwargs):
    """A proxy with balancers shop and api on one UDP port, each with a key
    of its own (balancers: the ProxyBeaconBalancer lines instead); /shop/
    goes to shop, /api/ to api. Returns (httpd, udp port)."""
    udp = free_port()
    h = httpd_factory(status=True, **kwargs)
    sticky_set = " stickysession=ROUTEID" if sticky else ""
    h.proxy_config = "".join(f"<Proxy balancer://{name}>\n"
                             f"    ProxySet growth=4{sticky_set}\n</Proxy>\n"
                             for name in ("shop", "api"))
    h.proxypass_config = ("ProxyPass /balancer-manager !\n"
                          "ProxyPass /beacon-status !\n"
                          "ProxyPass /server-status !\n"
                          "ProxyPass /shop/ balancer://shop/\n"
                          "ProxyPass /api/ balancer://api/\n"
                          "<Location /beacon-status>\n    SetHandler beacon-status\n"
                          "</Location>\n")
    lines = balancers if balancers is not None else [
        f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY}",
        f"ProxyBeaconBalancer api service=api secret={API_KEY}"]
    h.tail_config = (f"ProxyBeaconListen 127.0.0.1:{udp}\n"
                     f"ProxyBeaconSecret {SECRET}\n"
                     f"ProxyBeaconTimeout {timeout}\n"
                     + "\n".join(lines) + "\n" + extra)
    return h, udp


class ServiceAnnouncer(Announcer):
    """An Announcer that names its service (svc=) and signs with its key."""

    def __init__(self, port, service, secret):
        super().__init__(port, secret=secret)
        self.service = service

    def announce(self, url=None, ts=None, extra=(), **fields):
        return super().announce(url, ts=ts, extra=[("svc", self.service)] + list(extra),
                                **fields)


def receivers_json(h):
    status, body = h.get("/beacon-status?json")
    assert status == 200, body
    return {rx["balancer"]: rx for rx in json.loads(body)["receivers"]}


def names(h, balancer):
    return sorted(w["name"] for w in h.balancer_members(balancer))


def wait_in(h, balancer, url, want_enabled=True, timeout=10):
    def state():
        for w in h.balancer_members(balancer):
            if w["name"] == url and enabled(w) == want_enabled:
                return w
        return None
    return wait_for(state, timeout, f"{url} {'enabled' if want_enabled else 'out'} "
                                    f"in balancer://{balancer}")


def test_each_services_backends_join_their_own_balancer_on_one_port(
        httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory)
    start_receiver(h)
    shop, api = ServiceAnnouncer(udp, "shop", SHOP_KEY), ServiceAnnouncer(udp, "api", API_KEY)
    s1, a1 = backend_factory("shop-1"), backend_factory("api-1")
    shop.announce(s1.url)
    api.announce(a1.url)
    wait_in(h, "shop", s1.url)
    wait_in(h, "api", a1.url)
    assert names(h, "shop") == [s1.url] and names(h, "api") == [a1.url]
    assert h.get("/shop/x")[1] == "shop-1" and h.get("/api/x")[1] == "api-1"
    h.wait_log(r"BCN00030: added backend %s to balancer://shop" % re.escape(s1.url), since=0)


def test_a_datagram_for_one_service_signed_with_anothers_key_adds_nothing(
        httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory)
    start_receiver(h)
    forged = ServiceAnnouncer(udp, "shop", API_KEY)
    default = ServiceAnnouncer(udp, "shop", SECRET)
    b = backend_factory("b")
    mark = h.log_size()
    forged.announce(b.url)
    h.wait_log(r"dropped datagram from [^:]+:\d+: mac mismatch", since=mark)
    default.announce(b.url)  # the receiver's own key is not shop's
    wait_for(lambda: receivers_json(h)["balancer://shop"]["dropped"]["mac_mismatch"] == 2,
             10, "two mac mismatches")
    assert names(h, "shop") == [] and names(h, "api") == []


def test_the_status_shows_each_balancer_with_its_service_and_members(
        httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory)
    start_receiver(h)
    s1, a1 = backend_factory("shop-1"), backend_factory("api-1")
    ServiceAnnouncer(udp, "shop", SHOP_KEY).announce(s1.url)
    ServiceAnnouncer(udp, "api", API_KEY).announce(a1.url)
    wait_in(h, "api", a1.url)
    wait_in(h, "shop", s1.url)
    rx = receivers_json(h)
    assert set(rx) == {"balancer://shop", "balancer://api"}
    assert rx["balancer://shop"]["service"] == "shop"
    assert rx["balancer://api"]["service"] == "api"
    assert rx["balancer://shop"]["listen"] == rx["balancer://api"]["listen"]
    assert [m["url"] for m in rx["balancer://shop"]["members"]] == [s1.url]
    assert [m["url"] for m in rx["balancer://api"]["members"]] == [a1.url]
    status, auto = h.get("/server-status?auto")
    assert status == 200
    assert "BeaconBalancer: balancer://shop service=shop members=1 records=1" in auto, auto
    assert "BeaconBalancer: balancer://api service=api members=1 records=1" in auto, auto
    status, page = h.get("/beacon-status?metrics")
    assert status == 200
    assert re.search(r'beacon_receiver_listening\{listen="127\.0\.0\.1:%d",'
                     r'balancer="balancer://api"\} 1' % udp, page), page[:2000]


def test_an_unknown_service_is_wrong_service_after_a_valid_mac(httpd_factory,
                                                              backend_factory):
    h, udp = services_proxy(httpd_factory)
    start_receiver(h)
    b = backend_factory("b")
    mark = h.log_size()
    ServiceAnnouncer(udp, "cart", SECRET).announce(b.url)
    h.wait_log(r"dropped datagram from [^:]+:\d+: wrong service \(svc=cart\)", since=mark)
    Announcer(udp).announce(b.url)  # no svc, and no balancer without a service
    # drops before a datagram's service is known count on the first balancer
    wait_for(lambda: receivers_json(h)["balancer://shop"]["dropped"]["wrong_service"] == 2,
             10, "two wrong services")
    assert names(h, "shop") == [] and names(h, "api") == []


def test_a_datagram_without_svc_goes_to_the_balancer_without_a_service(
        httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory, balancers=[
        "ProxyBeaconBalancer shop",
        f"ProxyBeaconBalancer api service=api secret={API_KEY}"])
    start_receiver(h)
    s, a = backend_factory("s"), backend_factory("a")
    Announcer(udp).announce(s.url)
    ServiceAnnouncer(udp, "api", API_KEY).announce(a.url)
    wait_in(h, "shop", s.url)
    wait_in(h, "api", a.url)
    assert names(h, "shop") == [s.url] and names(h, "api") == [a.url]


def test_the_same_url_in_two_services_is_two_members_whose_leases_lapse_apart(
        httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory, timeout="2")
    start_receiver(h)
    shop, api = ServiceAnnouncer(udp, "shop", SHOP_KEY), ServiceAnnouncer(udp, "api", API_KEY)
    b = backend_factory("both")
    with Heartbeat(api, b.url, period=0.3):
        shop.announce(b.url)
        wait_in(h, "shop", b.url)
        wait_in(h, "api", b.url)
        # shop falls silent: out of shop's rotation only
        h.wait_log(r"BCN00035: evicted backend %s from balancer://shop" % re.escape(b.url),
                   timeout=10, since=0)
        assert not enabled(h.worker(b.url, balancer="shop"))
        assert enabled(h.worker(b.url, balancer="api"))
        # a leaving in api leaves shop's member alone, and vice versa
        shop.announce(b.url)
        wait_in(h, "shop", b.url)
    api.announce(b.url, state="leaving")
    wait_in(h, "api", b.url, want_enabled=False)
    assert enabled(h.worker(b.url, balancer="shop"))


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
def test_a_restart_keeps_every_balancers_members_apart(httpd_factory, backend_factory, how):
    h, udp = services_proxy(httpd_factory)
    start_receiver(h)
    shop, api = ServiceAnnouncer(udp, "shop", SHOP_KEY), ServiceAnnouncer(udp, "api", API_KEY)
    s, a, both = backend_factory("s"), backend_factory("a"), backend_factory("both")
    for ann, url in ((shop, s.url), (api, a.url), (shop, both.url), (api, both.url)):
        ann.announce(url)
    wait_in(h, "shop", both.url)
    wait_in(h, "api", both.url)
    api.announce(both.url, state="leaving")
    wait_in(h, "api", both.url, want_enabled=False)
    mark = h.log_size()
    restart(h, how)
    h.wait_log(r"BCN00011: restored 2 member\(s\) of balancer://shop", since=mark)
    h.wait_log(r"BCN00011: restored 2 member\(s\) of balancer://api", since=mark)
    assert names(h, "shop") == sorted([s.url, both.url])
    assert names(h, "api") == sorted([a.url, both.url])
    assert enabled(h.worker(both.url, balancer="shop"))
    assert not enabled(h.worker(both.url, balancer="api"))


# ---- drain and standby ------------------------------------------------------------

def test_a_draining_member_takes_only_its_sticky_requests(httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory, sticky=True)
    start_receiver(h)
    shop = ServiceAnnouncer(udp, "shop", SHOP_KEY)
    d, o = backend_factory("d"), backend_factory("o")
    shop.announce(d.url, extra=[("route", "d")])
    shop.announce(o.url, extra=[("route", "o")])
    wait_in(h, "shop", d.url)
    wait_in(h, "shop", o.url)
    mark = h.log_size()
    shop.announce(d.url, state="draining", extra=[("route", "d")])
    h.wait_log(r"BCN00141: backend draining %s in balancer://shop" % re.escape(d.url),
               since=mark)
    assert "Drn" in h.worker(d.url, balancer="shop")["flags"]
    fresh = collections.Counter(h.get("/shop/x")[1] for _ in range(10))
    assert fresh == {"o": 10}, fresh
    sticky = collections.Counter(h.get("/shop/x", headers={"Cookie": "ROUTEID=x.d"})[1]
                                 for _ in range(5))
    assert sticky == {"d": 5}, sticky
    # a normal announcement clears what the announced state set
    shop.announce(d.url, extra=[("route", "d")])
    wait_for(lambda: "Drn" not in h.worker(d.url, balancer="shop")["flags"], 5,
             "the drain flag to clear")
    again = collections.Counter(h.get("/shop/x")[1] for _ in range(10))
    assert again["d"] > 0, again


def test_a_standby_member_serves_only_while_no_other_member_is_usable(
        httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory)
    start_receiver(h)
    shop = ServiceAnnouncer(udp, "shop", SHOP_KEY)
    sb, main = backend_factory("standby"), backend_factory("main")
    shop.announce(main.url)
    mark = h.log_size()
    shop.announce(sb.url, state="standby")
    h.wait_log(r"BCN00142: backend standby %s in balancer://shop" % re.escape(sb.url),
               since=mark)
    wait_in(h, "shop", sb.url)
    assert "Stby" in h.worker(sb.url, balancer="shop")["flags"]
    served = collections.Counter(h.get("/shop/x")[1] for _ in range(10))
    assert served == {"main": 10}, served
    shop.announce(main.url, state="leaving")
    wait_in(h, "shop", main.url, want_enabled=False)
    served = collections.Counter(h.get("/shop/x")[1] for _ in range(5))
    assert served == {"standby": 5}, served


def test_an_announcement_without_state_never_clears_an_admins_flag(httpd_factory,
                                                                  backend_factory):
    h, udp = services_proxy(httpd_factory)
    start_receiver(h)
    shop = ServiceAnnouncer(udp, "shop", SHOP_KEY)
    b = backend_factory("b")
    shop.announce(b.url)
    wait_in(h, "shop", b.url)
    h.set_worker_status("shop", b.url, N=1)
    for _ in range(3):
        shop.announce(b.url)
    h.wait_log(r"BCN00091: kept the settings of %s in balancer://shop for restarts: "
               r"flags 'N'" % re.escape(b.url), since=0)
    assert "Drn" in h.worker(b.url, balancer="shop")["flags"]


# ---- apache2 -t -------------------------------------------------------------------

@pytest.mark.parametrize("lines,message", [
    (["ProxyBeaconBalancer shop service=shop", "ProxyBeaconBalancer api service=shop"],
     r"ProxyBeaconBalancer: service shop is already the service of balancer://shop"),
    (["ProxyBeaconBalancer shop", "ProxyBeaconBalancer api"],
     r"ProxyBeaconBalancer: balancer://shop already takes the announcements without "
     r"a service"),
    (["ProxyBeaconBalancer shop service=shop", "ProxyBeaconBalancer nope service=nope"],
     r"balancer://nope is not defined"),
    (["ProxyBeaconBalancer shop service=shop", "ProxyBeaconBalancer shop service=api"],
     r"ProxyBeaconBalancer: balancer://shop is named twice"),
    (["ProxyBeaconBalancer shop service=sh/op"], r"ProxyBeaconBalancer: service=sh/op"),
    (["ProxyBeaconBalancer shop service=shop secret=hex:12"], r"ProxyBeaconBalancer: secret="),
    (["ProxyBeaconBalancer shop colour=blue"], r"ProxyBeaconBalancer: colour=blue"),
])
def test_a_bad_balancer_line_fails_the_config_test(httpd_factory, lines, message):
    h, _ = services_proxy(httpd_factory, balancers=lines)
    rc, out = h.check_config()
    assert rc != 0 and re.search(message, out), out


def test_services_that_share_a_key_are_warned_about(httpd_factory):
    h, _ = services_proxy(httpd_factory, balancers=[
        "ProxyBeaconBalancer shop service=shop", "ProxyBeaconBalancer api service=api"])
    rc, out = h.check_config()
    assert rc == 0, out
    assert re.search(r"services shop and api of receiver udp 127\.0\.0\.1:\d+ share a "
                     r"key: no isolation between them", out), out


def test_a_service_without_secret_beside_the_default_balancer_is_warned_about(
        httpd_factory):
    """The balancer without service= takes datagrams signed with the
    receiver's ProxyBeaconSecret; a service line without secret= is verified
    with that same key, so its holder can join either (issue 32, defect 5)."""
    h, _ = services_proxy(httpd_factory, balancers=[
        "ProxyBeaconBalancer api", "ProxyBeaconBalancer shop service=shop"])
    rc, out = h.check_config()
    assert rc == 0, out
    warnings = [l for l in out.splitlines() if "BCN00191" in l]
    assert len(warnings) == 1, out
    assert re.search(r"balancer://shop \(service=shop\) has no secret= and shares the "
                     r"receiver's ProxyBeaconSecret with balancer://api \(no service=\): "
                     r"anyone who holds it can announce into both; give balancer://shop "
                     r"its own secret= \(\S+:\d+\)", warnings[0]), out
    # with a key of its own, nothing is shared
    h, _ = services_proxy(httpd_factory, balancers=[
        "ProxyBeaconBalancer api", f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY}"])
    rc, out = h.check_config()
    assert rc == 0 and "BCN00191" not in out and "share" not in out, out


def test_two_receivers_may_not_feed_one_balancer(httpd_factory):
    h, udp = services_proxy(httpd_factory)
    h.tail_config += (f"<VirtualHost 127.0.0.1:{h.port}>\n"
                      f"    ServerName other.test\n"
                      f"    ProxyBeaconListen 127.0.0.1:{free_port()}\n"
                      f"    ProxyBeaconBalancer shop service=shop\n"
                      f"</VirtualHost>\n")
    rc, out = h.check_config()
    assert rc != 0 and "balancer://shop" in out, out


def test_one_balancer_line_and_a_service_keep_todays_meaning(httpd_factory,
                                                            backend_factory):
    """ProxyBeaconService on a receiver with one balancer: that balancer's
    service, as before 1.2 (a datagram must name it)."""
    h, udp = services_proxy(httpd_factory, balancers=[
        "ProxyBeaconBalancer shop", "ProxyBeaconService shop"])
    start_receiver(h)
    b = backend_factory("b")
    mark = h.log_size()
    Announcer(udp).announce(b.url)
    h.wait_log(r"wrong service", since=mark)
    ServiceAnnouncer(udp, "shop", SECRET).announce(b.url)
    wait_in(h, "shop", b.url)
