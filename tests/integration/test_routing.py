# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Requests routed by the contexts members announce (issue 24, items 3 and
4): in the receiver's virtual host, a request whose path lies in a
context a member of a balancer claims goes to that balancer, its path
unchanged, with no ProxyPass for it; static configuration wins; a route
lives as long as a member claims it, answers 503 while its members are
out, and outlives restarts."""

import collections
import json
import http.client
import re

import pytest

from beacon_env import SECRET, start_receiver
from httpd import free_port, get_from, wait_for
from test_services import API_KEY, SHOP_KEY, ServiceAnnouncer, services_proxy, wait_in

pytestmark = pytest.mark.beacon

SHOP = f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY} contexts=/shop,/cart"
API = f"ProxyBeaconBalancer api service=api secret={API_KEY} contexts=/api/*"


def routing_proxy(httpd_factory, timeout="20", extra="", proxypass="", sticky=False,
                  vhost_config="", balancers=(SHOP, API), **kwargs):
    """A proxy whose balancers shop (contexts /shop, /cart) and api (any
    context under /api), or balancers' lines, have no ProxyPass; (httpd,
    udp port)."""
    h, udp = services_proxy(httpd_factory, timeout=timeout, balancers=list(balancers),
                            extra=extra + vhost_config, sticky=sticky, **kwargs)
    h.proxypass_config = ("ProxyPass /balancer-manager !\n"
                          "ProxyPass /beacon-status !\n"
                          "ProxyPass /server-status !\n" + proxypass +
                          "<Location /beacon-status>\n    SetHandler beacon-status\n"
                          "</Location>\n")
    return h, udp


def shop_of(udp):
    return ServiceAnnouncer(udp, "shop", SHOP_KEY)


def api_of(udp):
    return ServiceAnnouncer(udp, "api", API_KEY)


def claim(announcer, url, ctx, **kw):
    extra = [("ctx", ctx)] if ctx else []
    announcer.announce(url, extra=extra + list(kw.pop("extra", ())), **kw)


def shop_routed(httpd_factory, backend_factory, **kwargs):
    """A started routing_proxy(**kwargs) whose backend shop-1 claims /shop
    and answers it; (httpd, udp port, backend)."""
    h, udp = routing_proxy(httpd_factory, **kwargs)
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, "/shop")
    wait_routed(h, "/shop/x", "shop-1")
    return h, udp, b


def two_applications(httpd_factory, backend_factory, shop_contexts):
    """A started routing_proxy whose shop-1 claims shop_contexts and api-1
    /api/v1, routed; (httpd, shop-1, api-1)."""
    h, udp = routing_proxy(httpd_factory)
    start_receiver(h)
    s, a = backend_factory("shop-1"), backend_factory("api-1")
    claim(shop_of(udp), s.url, shop_contexts)
    claim(api_of(udp), a.url, "/api/v1")
    wait_routed(h, "/api/v1/x", "api-1")
    return h, s, a


def wait_routed(h, path, body, timeout=10):
    """Until GET path answers 200 with body."""
    return wait_for(lambda: h.get(path) == (200, body), timeout,
                    f"{path} routed to {body}")


def wait_status(h, path, status, timeout=10):
    return wait_for(lambda: h.get(path)[0] == status, timeout, f"{path} answering {status}")


def test_a_claimed_context_reaches_its_member_with_the_path_unchanged(
        httpd_factory, backend_factory):
    h, udp, b = shop_routed(httpd_factory, backend_factory)
    assert h.get("/shop") == (200, "shop-1")
    assert h.get("/shop;jsessionid=1") == (200, "shop-1")
    assert h.get("/shop/a/b?q=1&r=2") == (200, "shop-1")
    seen = b.requests()
    for path in ("/shop/x", "/shop", "/shop;jsessionid=1", "/shop/a/b?q=1&r=2"):
        assert f"GET {path}" in seen, seen
    h.wait_log(r"BCN00146: context /shop routed to balancer://shop", since=0)


def test_paths_outside_every_claimed_context_are_left_to_httpd(httpd_factory,
                                                               backend_factory):
    h, udp, b = shop_routed(httpd_factory, backend_factory)
    # a segment boundary, case, and /cart allowed but claimed by no one
    for path in ("/shopping", "/Shop/x", "/cart", "/x", "/"):
        assert h.get(path)[0] == 404, path
    assert all(not r.startswith(("GET /shopping", "GET /cart", "GET /x"))
               for r in b.requests())


def test_each_balancer_gets_its_own_contexts(httpd_factory, backend_factory):
    h, s, a = two_applications(httpd_factory, backend_factory, "/shop,/cart")
    wait_routed(h, "/cart/y", "shop-1")
    assert h.get("/shop/z") == (200, "shop-1")
    assert h.get("/api/v2/x")[0] == 404
    assert "GET /api/v1/x" in a.requests()


def test_static_proxypass_and_its_exclusions_win(httpd_factory, backend_factory):
    static = backend_factory("static")
    h, udp = routing_proxy(httpd_factory, proxypass=(
        "ProxyPass /shop/private !\n"
        f"ProxyPass /shop/legacy {static.url}/old\n"
        f"<Location /shop/loc>\n    ProxyPass {static.url}/loc\n</Location>\n"))
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, "/shop")
    wait_routed(h, "/shop/x", "shop-1")
    assert h.get("/shop/private/x")[0] == 404
    assert h.get("/shop/legacy/y") == (200, "static")
    assert h.get("/shop/loc/z") == (200, "static")
    assert "GET /old/y" in static.requests() and "GET /loc/z" in static.requests()
    assert not any("private" in r or "legacy" in r or "/loc" in r for r in b.requests())


def test_a_rewrite_proxy_rule_wins(httpd_factory, backend_factory):
    static = backend_factory("static")
    h, udp = routing_proxy(httpd_factory, extra=(
        "LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so\n"
        "RewriteEngine On\n"
        f"RewriteRule ^/shop/rw/(.*)$ {static.url}/rewritten/$1 [P]\n"))
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, "/shop")
    wait_routed(h, "/shop/x", "shop-1")
    assert h.get("/shop/rw/a") == (200, "static")
    assert "GET /rewritten/a" in static.requests()


def test_a_claim_outside_the_allow_list_routes_nothing(httpd_factory, backend_factory):
    h, udp = routing_proxy(httpd_factory)
    start_receiver(h)
    b, ok = backend_factory("b"), backend_factory("ok")
    mark = h.log_size()
    claim(shop_of(udp), b.url, "/shop,/admin")
    h.wait_log(r"context not allowed /admin", since=mark)
    claim(shop_of(udp), ok.url, "/cart")
    wait_routed(h, "/cart", "ok")
    assert h.get("/shop/x")[0] == 404 and h.get("/admin")[0] == 404
    assert b.url not in [w["name"] for w in h.balancer_members("shop")]


def test_a_context_no_member_announces_any_more_is_withdrawn(httpd_factory,
                                                             backend_factory):
    h, udp = routing_proxy(httpd_factory)
    start_receiver(h)
    b = backend_factory("shop-1")
    shop = shop_of(udp)
    claim(shop, b.url, "/shop,/cart")
    wait_routed(h, "/cart/x", "shop-1")
    mark = h.log_size()
    claim(shop, b.url, "/shop")
    wait_status(h, "/cart/x", 404)
    assert h.get("/shop/x") == (200, "shop-1")
    h.wait_log(r"BCN00150: context /cart withdrawn from balancer://shop", since=mark)
    # an announcement without ctx= claims nothing: the member stays, unrouted
    claim(shop, b.url, None)
    wait_status(h, "/shop/x", 404)
    wait_in(h, "shop", b.url)


def test_a_context_two_members_claim_stays_while_one_does(httpd_factory, backend_factory):
    h, udp = routing_proxy(httpd_factory)
    start_receiver(h)
    one, two = backend_factory("one"), backend_factory("two")
    shop = shop_of(udp)
    claim(shop, one.url, "/shop")
    claim(shop, two.url, "/shop")
    wait_in(h, "shop", one.url)
    wait_in(h, "shop", two.url)
    wait_for(lambda: {h.get("/shop/x")[1] for _ in range(6)} == {"one", "two"}, 10,
             "both members answering /shop")
    # one moves to /cart: /shop stays, two still claims it
    claim(shop, one.url, "/cart")
    wait_routed(h, "/cart/x", "one")
    assert all(h.get("/shop/x")[0] == 200 for _ in range(6))
    claim(shop, two.url, "/cart")
    wait_status(h, "/shop/x", 404)


def test_members_out_of_rotation_answer_503_until_forgotten(httpd_factory,
                                                             backend_factory):
    h, udp, b = shop_routed(httpd_factory, backend_factory, timeout="2",
                           extra="ProxyBeaconMaxSkew 2\nProxyBeaconForget 5\n")
    shop = shop_of(udp)
    # leaving keeps the claim: the application is deployed but down
    claim(shop, b.url, None, state="leaving")
    wait_status(h, "/shop/x", 503)
    h.expect_errors("AH01170")  # mod_proxy_balancer: all workers in error state
    # silent past ProxyBeaconForget: forgotten, and its route with it
    wait_status(h, "/shop/x", 404, timeout=20)


def test_an_evicted_member_keeps_its_route_answering_503(httpd_factory, backend_factory):
    h, udp, b = shop_routed(httpd_factory, backend_factory, timeout="1")
    wait_in(h, "shop", b.url, want_enabled=False, timeout=10)
    assert h.get("/shop/x")[0] == 503
    h.expect_errors("AH01170")
    claim(shop_of(udp), b.url, "/shop")
    wait_routed(h, "/shop/x", "shop-1")


@pytest.mark.parametrize("how", ["graceful", "stop-start"])
def test_routes_survive_restarts(httpd_factory, backend_factory, how):
    h, s, a = two_applications(httpd_factory, backend_factory, "/shop")
    wait_routed(h, "/shop/x", "shop-1")
    if how == "graceful":
        h.graceful()
    else:
        h.stop()
        h.start()
    # before any announcement of the new generation
    assert h.get("/shop/x") == (200, "shop-1")
    assert h.get("/api/v1/x") == (200, "api-1")
    assert h.get("/cart")[0] == 404
    h.wait_log(r"BCN00154: restored 2 route\(s\) of udp ", since=0)


def test_another_virtual_host_does_not_route(httpd_factory, backend_factory):
    vport = free_port()
    vhost = (f"Listen 127.0.0.1:{vport}\n<VirtualHost 127.0.0.1:{vport}>\n"
             "    ServerName other.test\n</VirtualHost>\n")
    h, udp, b = shop_routed(httpd_factory, backend_factory, vhost_config=vhost)
    conn = http.client.HTTPConnection("127.0.0.1", vport, timeout=10)
    try:
        conn.request("GET", "/shop/x", headers={"Host": "other.test"})
        assert conn.getresponse().status == 404
    finally:
        conn.close()


# the route in a cookie, or in a path parameter (the member receives the
# path as sent, and the context is matched without it)
@pytest.mark.parametrize("carrier", ["cookie", "path"])
def test_sticky_sessions_follow_routes_through_a_context(httpd_factory, backend_factory,
                                                          carrier):
    h, udp = routing_proxy(httpd_factory, sticky=True)
    start_receiver(h)
    one, two = backend_factory("one"), backend_factory("two")
    shop = shop_of(udp)
    claim(shop, one.url, "/shop", extra=[("route", "r1")])
    claim(shop, two.url, "/shop", extra=[("route", "r2")])
    wait_in(h, "shop", one.url)
    wait_in(h, "shop", two.url)
    for route, name in (("r1", "one"), ("r2", "two")):
        if carrier == "cookie":
            path, headers = "/shop/x", {"Cookie": f"ROUTEID=s.{route}"}
        else:
            path, headers = f"/shop/x;ROUTEID=s.{route}", None
        got = collections.Counter(h.get(path, headers=headers)[1] for _ in range(8))
        assert got == {name: 8}, got
        assert f"GET {path}" in (one if name == "one" else two).requests()


def test_location_access_control_applies_to_a_routed_context(httpd_factory,
                                                             backend_factory):
    h, udp = routing_proxy(httpd_factory, proxypass=(
        "<Location /shop/admin>\n    Require all denied\n</Location>\n"))
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, "/shop")
    wait_routed(h, "/shop/x", "shop-1")
    assert h.get("/shop/admin/x")[0] == 403
    h.expect_errors("AH01630")  # client denied by server configuration
    assert not any("admin" in r for r in b.requests())


def test_an_error_document_under_a_context_is_routed_like_proxypass(httpd_factory,
                                                                     backend_factory):
    # an ErrorDocument is an internal redirect: it passes translation again,
    # and is routed as a ProxyPass would route it
    h, udp = routing_proxy(httpd_factory, proxypass=(
        "ProxyPass /shop/gone !\n"
        "<Location /shop/gone>\n    Require all denied\n</Location>\n"
        "ErrorDocument 403 /shop/sorry\n"))
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, "/shop")
    wait_routed(h, "/shop/x", "shop-1")
    # the member's answer, with its own status: a ProxyPass to the balancer
    # gives the same (mod_proxy_http keeps a proxied ErrorDocument's status
    # unless ProxyErrorOverride)
    assert h.get("/shop/gone/x") == (200, "shop-1")
    h.expect_errors("AH01630")
    assert "GET /shop/sorry" in b.requests()


def test_a_new_context_is_routed_on_the_next_request(httpd_factory, backend_factory):
    h, udp, b = shop_routed(httpd_factory, backend_factory)
    shop = shop_of(udp)
    mark = h.log_size()
    claim(shop, b.url, "/shop,/cart")
    h.wait_log(r"BCN00146: context /cart routed to balancer://shop", since=mark)
    # every child, at once: KeepAlive Off spreads these over the children
    assert all(h.get("/cart/x") == (200, "shop-1") for _ in range(20))


def test_no_route_is_made_for_a_balancer_without_contexts(httpd_factory, backend_factory):
    udp = free_port()
    h = httpd_factory(status=True)
    h.proxy_config = "<Proxy balancer://shop>\n    ProxySet growth=4\n</Proxy>\n"
    h.proxypass_config = "ProxyPass /balancer-manager !\n"
    h.tail_config = (f"ProxyBeaconListen 127.0.0.1:{udp}\n"
                     f"ProxyBeaconSecret {SECRET}\n"
                     f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY}\n")
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, "/shop")
    wait_in(h, "shop", b.url)
    assert h.get("/shop/x")[0] == 404
    assert not re.search(r"BCN0015[34]", h.error_log())


def test_the_status_pages_show_each_context_its_balancer_and_members(httpd_factory,
                                                                     backend_factory):
    h, udp = routing_proxy(httpd_factory, timeout="2")
    start_receiver(h)
    one, two, a = backend_factory("one"), backend_factory("two"), backend_factory("api-1")
    shop, api = shop_of(udp), api_of(udp)
    claim(shop, one.url, "/shop,/cart")
    claim(shop, two.url, "/shop")
    claim(api, a.url, "/api/v1")
    wait_routed(h, "/api/v1/x", "api-1")
    wait_in(h, "shop", two.url)

    def contexts():
        status, body = h.get("/beacon-status?json")
        assert status == 200, body
        return {c["context"]: c for c in json.loads(body)["contexts"]}
    def shop_shown():
        # the lease is short (for api's eviction below): shop's stay renewed
        claim(shop, one.url, "/shop,/cart")
        claim(shop, two.url, "/shop")
        c = contexts()
        members = c.get("/shop", {}).get("members", [])
        return c if len(members) == 2 and {m["state"] for m in members} == {"active"} else None
    got = wait_for(shop_shown, 10, "both members of /shop shown active")
    assert sorted(got) == ["/api/v1", "/cart", "/shop"]
    assert got["/shop"]["balancer"] == "balancer://shop"
    assert got["/api/v1"]["balancer"] == "balancer://api"
    assert {m["url"]: m["state"] for m in got["/shop"]["members"]} == {
        one.url: "active", two.url: "active"}
    assert [m["url"] for m in got["/cart"]["members"]] == [one.url]
    status, auto = h.get("/server-status?auto")
    assert "BeaconContexts: 3\n" in auto and "BeaconContextsDown: 0\n" in auto, auto
    status, page = h.get("/beacon-status")
    assert "<h2>Contexts</h2>" in page and "<code>/api/v1</code>" in page
    # api's member goes silent: evicted, its context stays and is down
    wait_for(lambda: contexts()["/api/v1"]["members"][0]["state"] == "evicted", 15,
             "api's member evicted")
    status, metrics = h.get("/beacon-status?metrics")
    assert re.search(r'^beacon_context_members\{balancer="balancer://api",context="/api/v1",'
                     r'state="active"\} 0$', metrics, re.M), metrics
    assert re.search(r'^beacon_context_members\{balancer="balancer://api",context="/api/v1",'
                     r'state="evicted"\} 1$', metrics, re.M), metrics
    status, auto = h.get("/server-status?auto")
    assert "BeaconContextsDown: " in auto and "BeaconContextsDown: 0\n" not in auto, auto


def test_a_forward_proxy_request_is_left_to_mod_proxy(httpd_factory, backend_factory):
    other = backend_factory("other")
    h, udp, b = shop_routed(httpd_factory, backend_factory,
                            extra="ProxyRequests On\n<Proxy *>\n    Require ip 127.0.0.1\n</Proxy>\n")
    seen = len(b.requests())
    conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=10)
    try:
        # an absolute URI: mod_proxy took it in post_read_request (r->proxyreq)
        conn.request("GET", f"{other.url}/shop/x")
        resp = conn.getresponse()
        assert (resp.status, resp.read().decode()) == (200, "other")
    finally:
        conn.close()
    assert "GET /shop/x" in other.requests()
    assert len(b.requests()) == seen


def test_two_virtual_hosts_route_their_own_members(httpd_factory, backend_factory):
    vport, vudp = free_port(), free_port()
    vhost = (f"Listen 127.0.0.1:{vport}\n<VirtualHost 127.0.0.1:{vport}>\n"
             "    ServerName v.test\n"
             # a name of its own: a balancer of the main server's name
             # would be the main server's, inherited with its members
             "    <Proxy balancer://vshop>\n        ProxySet growth=4\n    </Proxy>\n"
             f"    ProxyBeaconListen 127.0.0.1:{vudp}\n"
             f"    ProxyBeaconBalancer vshop service=shop secret={SHOP_KEY} contexts=/shop\n"
             "</VirtualHost>\n")
    h, udp, main_member = shop_routed(httpd_factory, backend_factory, vhost_config=vhost)
    h.wait_log(r"BCN00050: listening for beacons on udp 127.0.0.1:%d " % vudp, since=0)
    theirs = backend_factory("v-shop")
    claim(shop_of(vudp), theirs.url, "/shop")

    def vhost_get(path):
        return get_from(vport, path, {"Host": "v.test"})
    wait_for(lambda: vhost_get("/shop/x") == (200, "v-shop"), 10, "the vhost's own route")
    got = collections.Counter(h.get("/shop/x") for _ in range(5))
    assert got == {(200, "shop-1"): 5}, got
    assert vhost_get("/cart")[0] == 404


def narrow_shop_to_cart(h, how):
    """contexts= of shop loses /shop, which api's list now holds; the
    restart `how` ("graceful" or "stop-start") applies it."""
    h.tail_config = h.tail_config.replace(
        "contexts=/shop,/cart", "contexts=/cart").replace(
        "contexts=/api/*", "contexts=/api/*,/shop")
    assert "contexts=/cart\n" in h.tail_config and ",/shop" in h.tail_config
    if how == "graceful":
        h.write_config()  # what a graceful restart reads
        h.graceful()
    else:
        h.stop()
        h.start()


@pytest.mark.parametrize("how", ["graceful", "stop-start"])
def test_a_restart_drops_the_contexts_a_narrowed_list_no_longer_allows(
        httpd_factory, backend_factory, how):
    h, udp = routing_proxy(httpd_factory)
    start_receiver(h)
    s, a = backend_factory("shop-1"), backend_factory("api-1")
    claim(shop_of(udp), s.url, "/shop,/cart")
    wait_routed(h, "/shop/x", "shop-1")
    wait_routed(h, "/cart/x", "shop-1")
    mark = h.log_size()
    narrow_shop_to_cart(h, how)
    # before any announcement of the new generation: the claim of /shop
    # is gone, the member and its allowed /cart stay
    assert [h.get("/shop/x")[0] for _ in range(20)] == [404] * 20
    assert h.get("/cart/x") == (200, "shop-1")
    wait_in(h, "shop", s.url)
    h.wait_log(r"BCN00190: restored %s in balancer://shop without context\(s\) /shop"
               % re.escape(s.url), since=mark)
    # the only balancer now allowed /shop gets it, no stale claim before it
    claim(api_of(udp), a.url, "/shop")
    wait_routed(h, "/shop/x", "api-1")
    assert [h.get("/shop/x")[1] for _ in range(20)] == ["api-1"] * 20


def test_leaving_is_never_refused_for_the_contexts_it_carries(httpd_factory,
                                                              backend_factory):
    h, udp = routing_proxy(httpd_factory)
    start_receiver(h)
    s = backend_factory("shop-1")
    claim(shop_of(udp), s.url, "/shop,/cart")
    wait_routed(h, "/cart/x", "shop-1")
    narrow_shop_to_cart(h, "graceful")
    wait_in(h, "shop", s.url)
    # the member's own goodbye still names /shop, now not allowed: it goes
    mark = h.log_size()
    claim(shop_of(udp), s.url, "/shop,/cart", state="leaving")
    wait_in(h, "shop", s.url, want_enabled=False)
    wait_status(h, "/cart/x", 503)
    h.expect_errors("AH01170")  # mod_proxy_balancer: all workers in error state
    assert "context not allowed" not in h.error_log()[mark:]
