# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The contexts a balancer's members may claim (issue 24, items 1 and 2):
contexts=LIST on ProxyBeaconBalancer, checked at apache2 -t, two balancers
of one virtual host never both allowed one context; an announcement whose
ctx= claims a context its balancer does not allow is dropped whole, before
the member table (context not allowed: logged, rate-limited, counted), and
one whose contexts are all allowed is applied as any other."""

import re

import pytest

from beacon_env import SECRET
from httpd import wait_for
from test_services import (API_KEY, SHOP_KEY, ServiceAnnouncer, names, receivers_json,
                           services_proxy, wait_in)

pytestmark = pytest.mark.beacon

SHOP = f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY}"
API = f"ProxyBeaconBalancer api service=api secret={API_KEY}"


def proxy(httpd_factory, shop_contexts, api_contexts=None):
    lines = [f"{SHOP} contexts={shop_contexts}" if shop_contexts else SHOP,
             f"{API} contexts={api_contexts}" if api_contexts else API]
    return services_proxy(httpd_factory, balancers=lines)


def test_a_member_whose_contexts_are_all_allowed_joins(httpd_factory, backend_factory):
    h, udp = proxy(httpd_factory, "/shop,/cart,/apps/*")
    h.start()
    b = backend_factory("b")
    ServiceAnnouncer(udp, "shop", SHOP_KEY).announce(
        b.url, extra=[("ctx", "/shop,/apps/x/y")])
    wait_in(h, "shop", b.url)


def test_a_context_not_allowed_drops_the_whole_announcement(httpd_factory,
                                                            backend_factory):
    h, udp = proxy(httpd_factory, "/shop,/apps/*")
    h.start()
    b, ok = backend_factory("b"), backend_factory("ok")
    shop = ServiceAnnouncer(udp, "shop", SHOP_KEY)
    mark = h.log_size()
    # one path out of three is enough: nothing of it is applied
    shop.announce(b.url, extra=[("ctx", "/shop,/apps,/apps/x")])
    shop.announce(b.url, extra=[("ctx", "/cart")])
    h.wait_log(r"BCN00020: \S+: dropped datagram from \S+: context not allowed "
               r"/apps from %s \(balancer://shop\)" % re.escape(b.url), since=mark)
    wait_for(lambda: receivers_json(h)["balancer://shop"]["dropped"]
             ["context_not_allowed"] == 2, 10, "two drops counted")
    status, body = h.get("/beacon-status?metrics")
    assert re.search(r'beacon_datagrams_dropped_total\{[^}]*balancer="balancer://shop",reason="context_not_allowed"[^}]*\} 2',
                     body), body
    # an allowed announcement from another url joins meanwhile; b never did
    shop.announce(ok.url, extra=[("ctx", "/shop")])
    wait_in(h, "shop", ok.url)
    assert b.url not in names(h, "shop")
    assert b.url not in [m["url"] for m in receivers_json(h)["balancer://shop"]["members"]]


def test_without_contexts_a_balancer_ignores_ctx(httpd_factory, backend_factory):
    h, udp = proxy(httpd_factory, None)
    h.start()
    b = backend_factory("b")
    ServiceAnnouncer(udp, "shop", SHOP_KEY).announce(b.url, extra=[("ctx", "/anything")])
    wait_in(h, "shop", b.url)


def test_an_announcement_without_ctx_claims_nothing_and_joins(httpd_factory,
                                                              backend_factory):
    h, udp = proxy(httpd_factory, "/shop")
    h.start()
    b = backend_factory("b")
    ServiceAnnouncer(udp, "shop", SHOP_KEY).announce(b.url)
    wait_in(h, "shop", b.url)


@pytest.mark.parametrize("shop,api", [("/shop", "/shop/admin"), ("/apps/*", "/apps"),
                                      ("/shop", "/shop/*"), ("/*", "/"),
                                      ("/apps/*", "/shop/*")])
def test_nested_or_separate_contexts_of_two_balancers_pass_the_config_test(
        httpd_factory, shop, api):
    h, _ = proxy(httpd_factory, shop, api)
    rc, out = h.check_config()
    assert rc == 0, out


@pytest.mark.parametrize("shop,api,message", [
    ("/shop", "/cart,/shop", r"contexts=/shop of balancer://api and /shop of balancer://shop"),
    ("/apps/*", "/apps/x", r"contexts=/apps/x of balancer://api and /apps/\* of "
                           r"balancer://shop"),
    ("/apps/*", "/apps/x/*", r"contexts=/apps/x/\* of balancer://api"),
    ("/*", "/shop", r"contexts=/shop of balancer://api and /\* of balancer://shop"),
])
def test_two_balancers_that_claim_one_context_fail_the_config_test(httpd_factory, shop,
                                                                  api, message):
    h, _ = proxy(httpd_factory, shop, api)
    rc, out = h.check_config()
    assert rc != 0 and re.search(message, out), out
    assert "claim the same contexts" in out


@pytest.mark.parametrize("value,message", [
    ("", r"contexts=: .*''"),
    ("/shop,,/cart", r"contexts=/shop,,/cart: .*''"),
    ("shop", r"contexts=shop: .*'shop'"),
    ("/shop/", r"'/shop/'"),
    ("/a//b", r"'/a//b'"),
    ("/apps*", r"'/apps\*'"),
    ("/a/*/b", r"'/a/\*/b'"),
    ("/" + "a" * 80, r"'/a{80}'"),
    (",".join(f"/c{i}" for i in range(65)), r"'/c64'"),
])
def test_a_bad_contexts_list_fails_the_config_test(httpd_factory, value, message):
    h, _ = services_proxy(httpd_factory, balancers=[f"{SHOP} contexts={value}", API])
    rc, out = h.check_config()
    assert rc != 0 and "ProxyBeaconBalancer: contexts=" in out and re.search(message, out), out
