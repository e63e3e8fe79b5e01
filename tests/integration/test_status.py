# Licensed under the Apache License, Version 2.0; see LICENSE.
"""What an operator sees without reading logs: the beacon-status page (HTML
and JSON) and beacon's section in server-status, checked against what was
announced and dropped."""

import json
from html.parser import HTMLParser

import pytest

import beacon_wire as bw
from beacon_env import (Announcer, receiver_config, start_receiver,
                        wait_member)
from httpd import free_port, wait_for
from beacon_env import sender_httpd

pytestmark = pytest.mark.beacon

STATUS_PAGE = """\
<Location /beacon-status>
    SetHandler beacon-status
    Require ip 127.0.0.1 ::1
</Location>
"""


def proxy_with_status(httpd_factory, timeout="30", growth=4, extra=""):
    udp = free_port()
    h = httpd_factory(status=True, growth=growth,
                      tail_config=STATUS_PAGE + receiver_config(udp, timeout=timeout,
                                                                extra=extra))
    h.proxypass_config = ("ProxyPass /balancer-manager !\nProxyPass /server-status !\n"
                          "ProxyPass /beacon-status !\nProxyPass / balancer://cluster/\n")
    start_receiver(h)
    return h, Announcer(udp)


def status_json(h):
    status, body = h.get("/beacon-status?json")
    assert status == 200, body
    return json.loads(body)


def auto_lines(h):
    status, body = h.get("/server-status?auto")
    assert status == 200
    return dict(line.split(": ", 1) for line in body.splitlines() if ": " in line)


def test_json_and_auto_report_members_and_drops(httpd_factory, backend_factory):
    h, ann = proxy_with_status(httpd_factory)
    a, b = backend_factory("a"), backend_factory("b")
    ann.announce(a.url, host="web-a", pid=101, seq=7)
    ann.announce(b.url, host="web-b", pid=202, seq=9)
    wait_member(h, a.url)
    wait_member(h, b.url)
    forged = bw.sign([("url", a.url), ("ts", bw.now_usec())], "hex:" + "ee" * 16)
    for _ in range(5):
        ann.send(forged)

    def five_dropped():
        doc = status_json(h)
        return doc if doc["receivers"][0]["dropped"]["mac_mismatch"] == 5 else None
    doc = wait_for(five_dropped, 10, "5 mac mismatches counted")
    rx = doc["receivers"][0]
    assert rx["listen"] == f"127.0.0.1:{ann.addr[1]}"
    assert rx["balancer"] == "balancer://cluster"
    assert rx["capacity"] == 256 and rx["records"] == 2
    assert rx["growth"] == {"used": 2, "free": 2, "recyclable": 0}
    assert rx["events"]["added"] == 2 and rx["events"]["accepted"] == 2
    members = {m["url"]: m for m in rx["members"]}
    assert set(members) == {a.url, b.url}
    assert members[a.url]["state"] == "active"
    assert members[a.url]["mark"] == "Bcn"
    assert members[a.url]["flags"] == "Init Ok"
    assert (members[a.url]["host"], members[a.url]["pid"], members[a.url]["seq"]) == \
        ("web-a", 101, 7)
    assert 0 < members[a.url]["lease_left"] <= 30
    assert all(v == 0 for k, v in rx["dropped"].items() if k != "mac_mismatch")

    auto = auto_lines(h)
    assert auto["BeaconMembers"] == "2"
    assert auto["BeaconDropped_mac_mismatch"] == "5"
    assert auto["BeaconAdded"] == "2"


def test_states_and_httpd_flags_show_side_by_side(httpd_factory, backend_factory):
    h, ann = proxy_with_status(httpd_factory, timeout="500ms")
    b = backend_factory("b")
    ann.announce(b.url)
    wait_member(h, b.url)
    h.set_worker_status("cluster", b.url, S=1)
    h.wait_log(r"evicted backend %s" % b.url)

    def evicted():
        m = status_json(h)["receivers"][0]["members"][0]
        return m if m["state"] == "evicted" else None
    m = wait_for(evicted, 5, "evicted in the JSON")
    assert m["flags"] == "Init Dis Stop" and m["lease_left"] is None
    assert status_json(h)["receivers"][0]["events"]["evicted"] == 1


class Checker(HTMLParser):
    """Counts open and closed elements, to see the page is well formed."""
    VOID = {"meta", "link", "hr", "br"}

    def __init__(self):
        super().__init__()
        self.stack, self.text = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_page_is_well_formed_and_escapes_peer_bytes(httpd_factory, backend_factory):
    h, ann = proxy_with_status(httpd_factory)
    b = backend_factory("b")
    ann.announce(b.url, host="<script>x</script>")
    wait_member(h, b.url)
    status, body = h.get("/beacon-status")
    assert status == 200
    assert "<script>" not in body
    checker = Checker()
    checker.feed(body)
    assert checker.stack == []
    text = " ".join(checker.text)
    assert b.url in text and "Bcn" in text and "active" in text

    status, page = h.get("/server-status")
    assert status == 200 and "mod_proxy_beacon" in page and b.url in page


def test_the_pages_are_read_only(httpd_factory):
    h, _ = proxy_with_status(httpd_factory)
    status, _, _ = h.request("POST", "/beacon-status?json", body="x=1",
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 405


def test_a_sender_reports_what_it_sent(httpd_factory):
    udp = free_port()
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{udp}"], interval="200ms")
    # this backend loads no mod_authz_host: loopback-only by its Listen
    backend.tail_config += STATUS_PAGE.replace("Require ip 127.0.0.1 ::1",
                                               "Require all granted")
    backend.start()

    def sent_some():
        snd = status_json(backend)["senders"][0]
        return snd if snd["sent"] >= 3 else None
    snd = wait_for(sent_some, 10, "three announcements sent")
    assert snd["targets"] == [f"127.0.0.1:{udp}"]
    assert snd["advertise"] == f"http://127.0.0.1:{backend.port}"
    assert snd["interval"] == 0.2 and snd["send_errors"] == 0
    assert status_json(backend)["receivers"] == []


def test_recycling_and_forgetting_are_counted(httpd_factory, backend_factory):
    """Growth used, free and recyclable now, and the recycled and forgotten
    counters, in ?json and ?auto: what tells an operator that churn is
    handled, before it bites."""
    h, ann = proxy_with_status(
        httpd_factory, timeout="500ms", growth=1,
        extra="ProxyBeaconMaxSkew 1\nProxyBeaconForget 3\n")
    a, b = backend_factory("a"), backend_factory("b")
    ann.announce(a.url)
    wait_member(h, a.url)
    wait_member(h, a.url, want_enabled=False)

    def growth(want):
        g = status_json(h)["receivers"][0]["growth"]
        return g if g == want else None
    # forgotten after 3 s of silence, recyclable after about 6 s
    h.wait_log(r"BCN00089: forgot backend %s" % a.url)
    wait_for(lambda: growth({"used": 1, "free": 0, "recyclable": 1}), 15,
             "a's slot recyclable")
    assert auto_lines(h)["BeaconGrowthRecyclable"] == "1"
    ann.announce(b.url)
    h.wait_log(r"BCN00038: recycled slot of %s for %s in balancer://cluster"
               % (a.url, b.url))
    rx = status_json(h)["receivers"][0]
    assert rx["events"]["recycled"] == 1 and rx["growth"]["recyclable"] == 0
    wait_member(h, b.url, want_enabled=False)
    h.wait_log(r"BCN00089: forgot backend %s" % b.url)
    wait_for(lambda: status_json(h)["receivers"][0]["events"]["forgotten"] == 2, 5,
             "both forgotten counted")
    auto = auto_lines(h)
    assert (auto["BeaconRecycled"], auto["BeaconForgotten"]) == ("1", "2")
    assert "recyclable now" in h.get("/beacon-status")[1]
