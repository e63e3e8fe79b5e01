# Licensed under the Apache License, Version 2.0; see LICENSE.
"""What a backend announces of itself besides its url (wire format 1.1):
its route, for sticky sessions, and its load factor. The backend owns what
it announces; a route may name one member only."""

import collections
import re

import pytest

from beacon_env import Announcer, receiver_config, start_receiver, wait_member
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon


def sticky_proxy(httpd_factory):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="30"))
    h.proxy_config = ("<Proxy balancer://cluster>\n"
                      "    ProxySet growth=4 stickysession=ROUTEID\n</Proxy>\n")
    start_receiver(h)
    return h, Announcer(udp)


def announce(ann, url, **fields):
    return ann.announce(url, extra=list(fields.items()))


def worker(h, url):
    return next(w for w in h.balancer_members() if w["name"] == url)


def test_announced_routes_make_sessions_stick(httpd_factory, backend_factory):
    h, ann = sticky_proxy(httpd_factory)
    b1, b2 = backend_factory("b1"), backend_factory("b2")
    announce(ann, b1.url, route="r1")
    announce(ann, b2.url, route="r2")
    for b, route in ((b1, "r1"), (b2, "r2")):
        wait_member(h, b.url)
        assert worker(h, b.url)["route"] == route
    answers = collections.Counter(
        h.get("/", headers={"Cookie": "ROUTEID=abc.r2"})[1] for _ in range(20))
    assert answers == {"b2": 20}, answers

    # the backend changes its route: applied with its next announcement
    mark = h.log_size()
    announce(ann, b2.url, route="r9")
    h.wait_log(r"BCN00094: changed route of %s to r9 in balancer://cluster"
               % re.escape(b2.url), since=mark)
    answers = collections.Counter(
        h.get("/", headers={"Cookie": "ROUTEID=abc.r9"})[1] for _ in range(10))
    assert answers == {"b2": 10}, answers


def test_a_route_another_member_has_is_refused(httpd_factory, backend_factory):
    h, ann = sticky_proxy(httpd_factory)
    first, second = backend_factory("first"), backend_factory("second")
    announce(ann, first.url, route="r1")
    wait_member(h, first.url)
    announce(ann, second.url, route="r1")
    h.wait_log(r"BCN00093: route r1 already used by %s in balancer://cluster: "
               r"%s joins without it" % (re.escape(first.url), re.escape(second.url)))
    wait_member(h, second.url)
    assert worker(h, second.url)["route"] == ""
    assert worker(h, first.url)["route"] == "r1"


def test_announced_load_factors_weigh_the_members(httpd_factory, backend_factory):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="30"))
    start_receiver(h)
    ann = Announcer(udp)
    light, heavy = backend_factory("light"), backend_factory("heavy")
    announce(ann, light.url, lbfactor="1")
    announce(ann, heavy.url, lbfactor="3")
    for b in (light, heavy):
        wait_member(h, b.url)
    assert worker(h, light.url)["loadfactor"] == "1.00"
    assert worker(h, heavy.url)["loadfactor"] == "3.00"
    answers = collections.Counter(h.get("/")[1] for _ in range(80))
    assert 2.0 <= answers["heavy"] / max(answers["light"], 1) <= 4.0, answers

    mark = h.log_size()
    announce(ann, light.url, lbfactor="2.5")
    h.wait_log(r"BCN00095: changed lbfactor of %s to 2\.50" % re.escape(light.url),
               since=mark)
    assert worker(h, light.url)["loadfactor"] == "2.50"


@pytest.mark.parametrize("field,value", [("route", "web/1"), ("lbfactor", "0.5"),
                                         ("lbfactor", "101")])
def test_a_bad_value_drops_the_whole_datagram(httpd_factory, backend_factory,
                                              field, value):
    h, ann = sticky_proxy(httpd_factory)
    b = backend_factory("b")
    announce(ann, b.url, **{field: value})
    h.wait_log(r"dropped datagram from [^:]+:\d+: bad field %s" % field)
    assert b.url not in [w["name"] for w in h.balancer_members()]


def test_what_the_backend_does_not_announce_is_the_admins(httpd_factory,
                                                         backend_factory):
    """An admin's route typed into balancer-manager stays while the backend
    announces none, and a restart gives it back."""
    h, ann = sticky_proxy(httpd_factory)
    b = backend_factory("b")
    announce(ann, b.url)
    wait_member(h, b.url)
    form = {"b": "cluster", "w": b.url, "nonce": h.balancer_nonce("cluster"),
            "w_wr": "admin1", "xml": "1"}
    import urllib.parse
    headers = dict(h._manager_headers(),
                   **{"Content-Type": "application/x-www-form-urlencoded"})
    status, _, _ = h.request("POST", "/balancer-manager",
                             urllib.parse.urlencode(form), headers)
    assert status == 200
    for _ in range(3):
        announce(ann, b.url)
    wait_for(lambda: worker(h, b.url)["route"] == "admin1", 5, "the admin's route")
    answers = collections.Counter(
        h.get("/", headers={"Cookie": "ROUTEID=x.admin1"})[1] for _ in range(5))
    assert answers == {"b": 5}
