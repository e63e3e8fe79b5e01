# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Path parameters and routed requests (issue 32, defect 1): a routed
request is matched on its servlet path (parameters removed from every
segment, "//" collapsed, "." and ".." resolved, as Tomcat serves it), and
<Location>, <LocationMatch> and ProxyPass see that path, so that no
spelling with ";" reaches a member past a rule that holds the plain path;
the member still receives the path as sent (;jsessionid=)."""

import pytest

from beacon_env import start_receiver
from test_routing import claim, routing_proxy, shop_of, wait_routed
from test_services import SHOP_KEY

pytestmark = pytest.mark.beacon

# a balancer whose members may claim /shop and anything under it
SHOP_TREE = f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY} contexts=/shop,/shop/*"

GUARDS = ("<Location /shop/admin>\n    Require all denied\n</Location>\n"
          '<LocationMatch "^/shop/secret">\n    Require all denied\n</LocationMatch>\n'
          "ProxyPass /shop/private !\n")

# what the plain path gets: denied by <Location>, by <LocationMatch>, and
# excluded from proxying (then httpd's own 404)
PLAIN = {"admin": 403, "secret": 403, "private": 404}

SPELLINGS = ("/shop/{}/users", "/shop/{}", "/shop/{};x/users", "/shop/{};x",
             "/shop;x/{}/users", "/shop/{}%3bx/users", "/shop/{}%3Bx",
             "/shop/x/..;/{}/users", "/shop/x/..;y/{}/users", "/shop/.;x/{}/users",
             "//shop//{};/users", "/shop/{};jsessionid=1/users", "/shop/;a/{};b/users")

# a member claiming the guarded contexts themselves, and one claiming only
# their parent: either is a lookup the parameter used to carry past
CLAIMS = {"own contexts": ("/shop/admin,/shop/secret,/shop/private,/shop/open", "/shop/open/x"),
          "parent only": ("/shop", "/shop/x")}


def guarded_shop(httpd_factory, backend_factory, ctx, ready, extra=""):
    h, udp = routing_proxy(httpd_factory, balancers=[SHOP_TREE], proxypass=GUARDS,
                           extra=extra)
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, ctx)
    wait_routed(h, ready, "shop-1")
    return h, b


@pytest.mark.parametrize("claims", sorted(CLAIMS))
def test_a_spelling_with_parameters_is_guarded_as_the_plain_path(
        httpd_factory, backend_factory, claims):
    h, b = guarded_shop(httpd_factory, backend_factory, *CLAIMS[claims])
    h.expect_errors("AH01630")  # client denied by server configuration
    got = {(name, spelling.format(name)): h.get(spelling.format(name))[0]
           for name in PLAIN for spelling in SPELLINGS}
    want = {(name, spelling.format(name)): PLAIN[name]
            for name in PLAIN for spelling in SPELLINGS}
    assert got == want
    leaked = [r for r in b.requests() if any(name in r for name in PLAIN)]
    assert leaked == []


def test_a_dot_dot_above_the_root_is_not_routed(httpd_factory, backend_factory):
    h, b = guarded_shop(httpd_factory, backend_factory, *CLAIMS["parent only"])
    for path in ("/..;/shop/x", "/shop/..;/..;/shop/x", "/shop/..;x/..;y/shop/x"):
        assert h.get(path)[0] != 200, path
    assert [r for r in b.requests() if ".." in r] == []


@pytest.mark.parametrize("path", ["/shop;jsessionid=1", "/shop/cart;jsessionid=ABC?q=1",
                                  "/shop/;jsessionid=1", "/shop/a;v=2/b;jsessionid=C3",
                                  "/shop/x/..;/y", "/shop/a%3bx/b", "//shop//a;/b"])
def test_a_routed_path_reaches_the_member_with_its_parameters(httpd_factory,
                                                                backend_factory, path):
    h, b = guarded_shop(httpd_factory, backend_factory, *CLAIMS["parent only"])
    assert h.get(path) == (200, "shop-1")
    # as sent, but decoded and with slashes merged, as httpd gives r->uri
    # to a ProxyPass
    sent = path.replace("%3b", ";").replace("//", "/")
    assert f"GET {sent}" in b.requests()


def test_a_context_ends_at_a_segment_not_at_a_parameter_of_a_longer_name(
        httpd_factory, backend_factory):
    h, b = guarded_shop(httpd_factory, backend_factory, "/shop/open", "/shop/open/x")
    # /shop/opening;x is /shop/opening: no context of the member's
    assert h.get("/shop/opening;x")[0] == 404
    assert h.get("/shop/open;x/y") == (200, "shop-1")
    assert "GET /shop/open;x/y" in b.requests()


def test_a_rewrite_rule_sees_the_path_as_sent(httpd_factory, backend_factory):
    # Server-context RewriteRules run before routing, on r->uri: decoded,
    # "//" merged, "." and ".." resolved, but parameters kept. A pattern
    # that admits ";" as the end of its last segment catches a parameter
    # there; one on an earlier segment, or a "..;" segment, is not in what
    # it sees (docs/security.md: deny with <Location>, which sees the
    # servlet path).
    h, b = guarded_shop(httpd_factory, backend_factory, *CLAIMS["parent only"], extra=(
        "LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so\n"
        "RewriteEngine On\n"
        "RewriteRule ^/shop/blocked(/|;|$) - [F]\n"))
    for path in ("/shop/blocked/users", "/shop/blocked", "/shop/blocked;x/users",
                 "/shop/blocked;x", "/shop/blocked%3bx/users", "//shop//blocked;/users"):
        assert h.get(path)[0] == 403, path
    assert [r for r in b.requests() if "blocked" in r] == []
    for path in ("/shop;x/blocked/users", "/shop/x/..;/blocked/users"):
        assert h.get(path) == (200, "shop-1"), path
        assert f"GET {path}" in b.requests()


def test_a_proxypass_holding_the_servlet_path_keeps_the_request_unrouted(
        httpd_factory, backend_factory):
    # the check runs on a copy of the request: had it written the match
    # into r, mod_proxy would proxy "/shop/legacy;x/y" to static
    static = backend_factory("static")
    h, udp = routing_proxy(httpd_factory, proxypass=f"ProxyPass /shop/legacy {static.url}/old\n")
    start_receiver(h)
    b = backend_factory("shop-1")
    claim(shop_of(udp), b.url, "/shop")
    wait_routed(h, "/shop/x", "shop-1")
    assert h.get("/shop/legacy/y") == (200, "static")
    assert h.get("/shop/legacy;x/y")[0] == 404
    assert h.get("/shop;x/legacy/y")[0] == 404
    assert [r for r in static.requests() if ";" in r] == []
    assert [r for r in b.requests() if "legacy" in r] == []

