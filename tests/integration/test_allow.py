# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Who may announce what (issue 26): ProxyBeaconAllow on a receiver and
allow= on a ProxyBeaconBalancer bound what an announced url may point at.

What must hold: without a list, link-local, unspecified, multicast and
broadcast addresses are refused and a normal member still joins; a list
allows networks (IPv4, IPv6), names (exact, *.suffix, matched as written)
and `source` (the datagram's own address); allow= narrows the receiver's
list; a refused url is dropped before the table (url not allowed: logged,
rate-limited, counted) and leaves no trace in the table, the reserved
slots or the registry; apache2 -t refuses a bad entry.

No refused url is ever connected to: they are dropped before any member
exists. The urls that join point at loopback backends, or at names under
.invalid that nothing requests."""

import json
import re
import socket

import pytest

from beacon_env import (Announcer, receiver_config, restart, sender_httpd, start_receiver,
                        wait_member)
from httpd import free_port, wait_for
from test_registry import registry_file
from test_status import STATUS_PAGE

pytestmark = pytest.mark.beacon

PROXYPASS = ("ProxyPass /balancer-manager !\nProxyPass /beacon-status !\n"
             "ProxyPass /server-status !\nProxyPass / balancer://cluster/\n")
DROP_RE = r"BCN00020: \S+: dropped datagram from \S+: url not allowed %s: %s"


def allow_proxy(httpd_factory, allow=None, balancer="cluster", timeout=None):
    """A started proxy whose receiver has `ProxyBeaconAllow allow` (none
    when None), feeding `balancer` (a ProxyBeaconBalancer value)."""
    udp = free_port()
    extra = f"ProxyBeaconAllow {allow}\n" if allow else ""
    h = httpd_factory(status=True, tail_config=STATUS_PAGE + receiver_config(
        udp, balancer=balancer, timeout=timeout, extra=extra))
    h.proxypass_config = PROXYPASS
    start_receiver(h)
    return h, Announcer(udp)


def receiver_json(h):
    status, body = h.get("/beacon-status?json")
    assert status == 200, body
    [rx] = json.loads(body)["receivers"]
    return rx


def member_names(h):
    return [w["name"] for w in h.balancer_members()]


def drops(h):
    return receiver_json(h)["dropped"]["url_not_allowed"]


def refused(h, a, url, why=None, since=None):
    """Announces url and waits until it is counted as url not allowed; with
    why, also for its log line (one per 10 s: the first refusal's)."""
    before = drops(h)
    a.announce(url)
    wait_for(lambda: drops(h) == before + 1, 10, f"{url} counted as url not allowed")
    if why is not None:
        h.wait_log(DROP_RE % (re.escape(url), re.escape(why)), since=since)
    assert url not in member_names(h)


def joins(h, a, url):
    a.announce(url)
    wait_member(h, url)


class SourcedAnnouncer(Announcer):
    """An Announcer whose datagrams leave from a chosen loopback address."""

    def __init__(self, port, source):
        super().__init__(port)
        self.source = source

    def send(self, datagram):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((self.source, 0))
            s.sendto(datagram, self.addr)


# ---- the defaults ------------------------------------------------------------

@pytest.mark.parametrize("url,why", [
    ("http://169.254.169.254", "a link-local address (169.254.0.0/16), refused by default"),
    ("http://[fe80::1]", "a link-local address (fe80::/10), refused by default"),
    ("http://[::ffff:169.254.169.254]", "a link-local address (169.254.0.0/16), "
                                        "refused by default"),
    ("http://2852039166", "a link-local address (169.254.0.0/16), refused by default"),
    ("http://0.0.0.0:8080", "the unspecified address (0.0.0.0), refused by default"),
    ("http://224.0.0.1:8080", "a multicast address (224.0.0.0/4), refused by default"),
    ("http://255.255.255.255:8080", "the broadcast address (255.255.255.255), "
                                    "refused by default"),
])
def test_the_defaults_refuse_addresses_no_backend_has(httpd_factory, backend_factory,
                                                      url, why):
    h, a = allow_proxy(httpd_factory)
    b = backend_factory("b")
    mark = h.log_size()
    refused(h, a, url, why, mark)
    joins(h, a, b.url)  # a normal member still joins meanwhile
    assert url not in member_names(h)
    assert receiver_json(h)["dropped"]["url_not_allowed"] == 1
    assert receiver_json(h)["allow"] == {"receiver": None, "balancer": None}


def test_the_port_of_the_unspecified_address_does_not_matter(httpd_factory,
                                                           backend_factory):
    h, a = allow_proxy(httpd_factory)
    b = backend_factory("b")
    mark = h.log_size()
    # what a connect to 0.0.0.0 reaches: the proxy's own ports
    refused(h, a, f"http://0.0.0.0:{h.port}", "the unspecified address", mark)
    joins(h, a, b.url)


# ---- lists -------------------------------------------------------------------

def test_networks_allow_ipv4_and_ipv6_literals(httpd_factory, backend_factory):
    h, a = allow_proxy(httpd_factory, "127.0.0.0/30 ::1")
    b = backend_factory("b")
    mark = h.log_size()
    joins(h, a, b.url)
    joins(h, a, "http://[::1]:%d" % b.port)
    refused(h, a, "http://127.0.0.9:%d" % b.port, "no entry allows it (ProxyBeaconAllow)",
            mark)
    refused(h, a, "http://[::2]:8080")
    # an IPv4-mapped IPv6 literal is its IPv4 address
    joins(h, a, "http://[::ffff:127.0.0.2]:%d" % b.port)


def test_a_wide_network_does_not_open_link_local_but_naming_it_does(httpd_factory):
    h, a = allow_proxy(httpd_factory, "0.0.0.0/0 169.254.10.0/24")
    mark = h.log_size()
    refused(h, a, "http://169.254.169.254", "a link-local address", mark)
    # listed: allowed (added, never requested)
    a.announce("http://169.254.10.1:8080")
    wait_member(h, "http://169.254.10.1:8080")


def test_names_are_matched_exactly_or_by_suffix(httpd_factory):
    h, a = allow_proxy(httpd_factory, "api.apps.invalid *.svc.invalid")
    mark = h.log_size()
    for url in ("http://api.apps.invalid:8080", "http://API.Apps.invalid:8081",
                "http://web.svc.invalid:8080", "http://a.b.svc.invalid:8080"):
        a.announce(url)
        wait_member(h, url.lower())
    refused(h, a, "http://svc.invalid:8080", "no entry allows it (ProxyBeaconAllow)", mark)
    for url in ("http://x.api.apps.invalid:8080", "http://apps.invalid:8080"):
        refused(h, a, url)
    # a list of names allows no address: names are never resolved
    refused(h, a, "http://127.0.0.1:8080")


def test_source_allows_only_the_senders_own_address(httpd_factory, backend_factory):
    h, plain = allow_proxy(httpd_factory, "source")
    udp = plain.addr[1]
    b = backend_factory("b")
    a = SourcedAnnouncer(udp, "127.0.0.1")
    mark = h.log_size()
    refused(h, a, "http://127.0.0.2:%d" % b.port, "no entry allows it (ProxyBeaconAllow)",
            mark)
    joins(h, a, b.url)  # 127.0.0.1, as the datagram's source
    refused(h, a, "http://api.apps.invalid:8080")
    # the url refused above is allowed from 127.0.0.2: that sender's own
    other = SourcedAnnouncer(udp, "127.0.0.2")
    other.last_ts = a.last_ts
    other.announce("http://127.0.0.2:%d" % b.port)
    wait_member(h, "http://127.0.0.2:%d" % b.port)


def test_a_balancers_allow_narrows_the_receivers_list(httpd_factory, backend_factory):
    h, a = allow_proxy(httpd_factory, "127.0.0.0/8",
                       balancer="cluster allow=127.0.0.1,10.0.0.0/8")
    b = backend_factory("b")
    mark = h.log_size()
    joins(h, a, b.url)
    # in the receiver's list, not in the balancer's
    refused(h, a, "http://127.0.0.2:%d" % b.port,
            "no entry allows it (allow= of balancer://cluster)", mark)
    # in the balancer's, not in the receiver's: both must allow
    refused(h, a, "http://10.1.2.3:8080")
    # the views show both lists, as libbeacon writes them back
    assert receiver_json(h)["allow"] == {"receiver": "127.0.0.0/8",
                                         "balancer": "127.0.0.1 10.0.0.0/8"}
    status, page = h.get("/beacon-status")
    assert status == 200 and "127.0.0.0/8; within it 127.0.0.1 10.0.0.0/8" in page, page


def test_a_virtual_host_inherits_the_main_servers_list(httpd_factory, backend_factory):
    udp, vport = free_port(), free_port()
    vhost = (f"Listen 127.0.0.1:{vport}\n<VirtualHost 127.0.0.1:{vport}>\n"
             "    ServerName v.test\n"
             "    <Proxy balancer://v>\n        ProxySet growth=2\n    </Proxy>\n"
             + "".join("    " + line + "\n"
                       for line in receiver_config(udp, balancer="v").splitlines())
             + "</VirtualHost>\n")
    h = httpd_factory(tail_config="ProxyBeaconAllow 127.0.0.2\n" + vhost)
    h.proxypass_config = "ProxyPass /balancer-manager !\n"
    h.start()
    a = Announcer(udp)
    b = backend_factory("b")
    h.wait_log(r"listening for beacons on udp 127\.0\.0\.1:%d for balancer://v" % udp,
               since=0)
    a.announce(b.url)
    h.wait_log(DROP_RE % (re.escape(b.url), re.escape("no entry allows it (ProxyBeaconAllow)")))
    allowed = "http://127.0.0.2:%d" % b.port
    a.announce(allowed)
    h.wait_log(r"added backend %s to balancer://v" % re.escape(allowed))
    assert b.url not in h.error_log()[h.error_log().index("added backend"):]


# ---- no trace ----------------------------------------------------------------

def test_a_refused_url_leaves_no_trace(httpd_factory, backend_factory):
    udp = free_port()
    h = httpd_factory(status=True, tail_config=STATUS_PAGE + receiver_config(
        udp, balancer="cluster slots=4"))
    h.proxypass_config = PROXYPASS
    start_receiver(h)
    a = Announcer(udp)
    b = backend_factory("b")
    bad = "http://169.254.169.254"
    mark = h.log_size()
    for _ in range(50):
        a.announce(bad)
    joins(h, a, b.url)
    wait_for(lambda: receiver_json(h)["dropped"]["url_not_allowed"] == 50, 10,
             "50 drops counted")
    # logged once (rate-limited), the others held back
    assert len(re.findall(r"url not allowed", h.error_log()[mark:])) == 1
    rx = receiver_json(h)
    assert rx["records"] == 1, rx  # only b: no record, no replay mark of bad
    assert [m["url"] for m in rx["members"]] == [b.url]
    assert rx["slots"] == {"reserved": 4, "free": 3}, rx["slots"]
    assert bad not in member_names(h)
    status, body = h.get("/beacon-status?metrics")
    assert re.search(r'beacon_datagrams_dropped_total\{[^}]*reason="url_not_allowed"'
                     r'[^}]*\} 50', body), body
    h.stop()
    data = registry_file(h).read_bytes()
    assert b"169.254" not in data
    assert b.url.encode() in data


# ---- apache2 -t --------------------------------------------------------------

@pytest.mark.parametrize("directive,message", [
    ("ProxyBeaconAllow 10.1.0.0/8",
     "ProxyBeaconAllow: entry '10.1.0.0/8': the address has bits set past its prefix"),
    ("ProxyBeaconAllow 10.0.0.0/33", "ProxyBeaconAllow: entry '10.0.0.0/33': an IPv4 "
                                     "prefix length is at most 32"),
    ("ProxyBeaconAllow 10.1", "ProxyBeaconAllow: entry '10.1': not an IPv4 address"),
    ("ProxyBeaconAllow [fd00::]/8", "written without brackets"),
    ("ProxyBeaconAllow a.*.b", "ProxyBeaconAllow: entry 'a.*.b': a wildcard is a "
                               "leading \"*.\""),
    ("ProxyBeaconAllow", "ProxyBeaconAllow: expects one or more entries"),
])
def test_a_bad_entry_fails_the_config_test(httpd_factory, directive, message):
    h = httpd_factory(tail_config=receiver_config(free_port(), extra=directive + "\n"))
    rc, out = h.check_config()
    assert rc != 0 and message in out, out


def test_a_bad_allow_entry_of_a_balancer_fails_the_config_test(httpd_factory):
    h = httpd_factory(tail_config=receiver_config(
        free_port(), balancer="cluster allow=10.0.0.0/8,,127.0.0.1"))
    rc, out = h.check_config()
    assert rc != 0 and "ProxyBeaconBalancer: allow= entry '': an empty entry" in out, out


def test_a_good_list_passes_the_config_test(httpd_factory):
    h = httpd_factory(tail_config=receiver_config(
        free_port(), balancer="cluster allow=10.0.0.0/8,source",
        extra="ProxyBeaconAllow 10.0.0.0/8 fd00::/8 ::ffff:127.0.0.0/104 api.internal "
              "*.svc.cluster.local source\n"))
    rc, out = h.check_config()
    assert rc == 0, out


# ---- restarts ----------------------------------------------------------------

@pytest.mark.parametrize("how", ["graceful", "stop and start"])
def test_a_restart_with_a_tighter_list_does_not_restore_what_it_refuses(
        httpd_factory, backend_factory, how):
    h, a = allow_proxy(httpd_factory)
    b = backend_factory("b")
    kept, dropped = b.url, "http://127.0.0.2:%d" % b.port
    joins(h, a, kept)
    joins(h, a, dropped)
    h.tail_config = h.tail_config.replace(
        "ProxyBeaconListen", "ProxyBeaconAllow 127.0.0.1\nProxyBeaconListen")
    h.write_config()  # what a graceful restart reads
    mark = h.log_size()
    restart(h, how)
    h.wait_log(r"BCN00157: not restoring %s in balancer://cluster: url not allowed: "
               r"no entry allows it \(ProxyBeaconAllow\); beacon no longer manages it"
               % re.escape(dropped), since=mark if how == "graceful" else 0)
    wait_member(h, kept)
    wait_for(lambda: dropped not in member_names(h), 10, f"{dropped} gone")
    # and it cannot come back
    refused(h, a, dropped)


# ---- the sender's side -------------------------------------------------------

def test_a_sender_advertising_what_the_defaults_refuse_is_warned(httpd_factory):
    h = sender_httpd(httpd_factory, [f"127.0.0.1:{free_port()}"], advertise=False,
                     extra="ProxyBeaconAdvertise http://169.254.169.254:8080\n")
    rc, out = h.check_config()
    assert rc == 0, out
    assert ("BCN00158: ProxyBeaconAdvertise http://169.254.169.254:8080: a link-local "
            "address (169.254.0.0/16), refused by default: receivers drop its "
            "announcements (url not allowed) unless their ProxyBeaconAllow lists it"
            in out), out


def test_a_sender_advertising_a_reserved_slots_name_is_warned(httpd_factory):
    """No ProxyBeaconAllow opens a name under beacon.invalid: the line
    offers no such way out."""
    h = sender_httpd(httpd_factory, [f"127.0.0.1:{free_port()}"], advertise=False,
                     extra="ProxyBeaconAdvertise http://Slot-1.beacon.invalid.\n")
    rc, out = h.check_config()
    assert rc == 0, out
    line = next((l for l in out.splitlines() if "BCN00158" in l), "")
    assert line.endswith("BCN00158: ProxyBeaconAdvertise http://slot-1.beacon.invalid.: a "
                         "reserved slot's name (beacon.invalid), never a member's: "
                         "receivers drop its announcements (url not allowed)"), out


def test_a_sender_advertising_a_normal_origin_is_not_warned(httpd_factory):
    h = sender_httpd(httpd_factory, [f"127.0.0.1:{free_port()}"])
    rc, out = h.check_config()
    assert rc == 0 and "BCN00158" not in out, out
