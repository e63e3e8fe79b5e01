# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A key per member (issue 36, wire format 1.3): a service whose secret is
a master (`derive:`) verifies each datagram with the key derived for its
own svc= and url=, so a member's key announces that member only; a revoked
url is dropped before the MAC and its member leaves at the restart that
brings the revocation; several masters make a rotation."""

import re
import subprocess

import pytest

import beacon_wire as bw
from beacon_env import (SECRET, Announcer, Heartbeat, enabled, refused_by_apache2_t, restart,
                        sender_httpd, start_receiver, wait_member)
from httpd import free_port, wait_for
from test_sender import BEACONCTL
from test_services import ServiceAnnouncer, receivers_json, services_proxy, wait_in
from test_status import STATUS_PAGE

pytestmark = pytest.mark.beacon

MASTER = "hex:" + "5a17c0de" * 4
M2 = "hex:" + "0badc0ffee15900d" * 2
OLD = "hex:" + "0123456789abcdef" * 2
NEW = "hex:" + "fedcba9876543210" * 2


def derive_key(master, url, service=None):
    """`beaconctl derive-key`, the master from BEACON_SECRET: (key as
    `hex:...`, the canonical url it printed)."""
    args = [str(BEACONCTL), "derive-key", "--url", url]
    if service is not None:
        args += ["--service", service]
    r = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=10, env={"PATH": "/usr/bin:/bin", "BEACON_SECRET": master})
    assert r.returncode == 0, r.stderr
    key, canonical = r.stdout.splitlines()
    return key, canonical


def member_key(master, url, service=""):
    """The member key by beacon_wire (written from docs/wire-format.md),
    which must be the one beaconctl issues."""
    key = bw.member_key(master, service, url)
    if BEACONCTL.exists():
        assert derive_key(master, url, service or None) == ("hex:" + key.hex(), url)
    return key


def derive_proxy(httpd_factory, secrets, balancer="ProxyBeaconBalancer cluster", extra="",
                 **kwargs):
    """A proxy whose receiver verifies with secrets (ProxyBeaconSecret
    lines) into balancer://cluster, with /beacon-status; not started.
    Returns (httpd, udp port)."""
    udp = free_port()
    h = httpd_factory(**kwargs)
    h.proxypass_config = "ProxyPass /beacon-status !\n" + h.proxypass_config
    h.tail_config = receiver_tail(udp, secrets, balancer, extra)
    return h, udp


def receiver_tail(udp, secrets, balancer="ProxyBeaconBalancer cluster", extra=""):
    return (STATUS_PAGE + f"ProxyBeaconListen 127.0.0.1:{udp}\n{balancer}\n"
            "ProxyBeaconTimeout 30\n"
            + "".join(f"ProxyBeaconSecret {s}\n" for s in secrets) + extra)


def dropped(h, reason):
    """The receiver's drops for reason, on all its balancers (a drop before
    the datagram's service is known counts on the listener's first)."""
    return sum(rx["dropped"][reason] for rx in receivers_json(h).values())


def wait_dropped(h, reason, count):
    return wait_for(lambda: dropped(h, reason) >= count, 10, f"{count} drop(s) {reason}")


def in_rotation(h, url, balancer="cluster"):
    return any(w["name"] == url and enabled(w) for w in h.balancer_members(balancer))


def names(h, balancer="cluster"):
    return sorted(w["name"] for w in h.balancer_members(balancer))


def drop_line(reason, detail=""):
    return r"BCN00020: .*dropped datagram from [^:]+:\d+: %s%s" % (
        re.escape(reason), re.escape(detail))


# -- 1. a member key announces its own url and joins ------------------------

def master_source(workdir, form, master=MASTER):
    """The master as ProxyBeaconSecret takes it: inline, in a root-only
    file, or printed by a program."""
    if form == "hex":
        return f"derive:{master}"
    path = workdir / "master.secret"
    path.write_text(master + "\n")
    path.chmod(0o600)
    if form == "file":
        return f"Derive:file:{path}"  # the prefix in any case
    prog = workdir / "get-master"
    prog.write_text(f"#!/bin/sh\ncat {path}\n")
    prog.chmod(0o700)
    return f"derive:exec:{prog}"


@pytest.mark.parametrize("form", ["hex", "file", "exec"])
def test_a_member_key_joins_a_receiver_whose_secret_is_a_master(
        httpd_factory, backend_factory, workdir, form):
    h, udp = derive_proxy(httpd_factory, [master_source(workdir, form)])
    start_receiver(h)
    b = backend_factory("b")
    Announcer(udp, secret=member_key(MASTER, b.url)).announce(b.url)
    wait_member(h, b.url)
    assert h.get("/") == (200, "b")
    assert MASTER[4:] not in h.error_log()
    # the master itself signs nothing in derive mode
    other = backend_factory("o")
    Announcer(udp, secret=MASTER).announce(other.url)
    wait_dropped(h, "mac_mismatch", 1)
    assert names(h) == [b.url]


def test_a_member_key_joins_its_service_whose_secret_is_a_master(
        httpd_factory, backend_factory):
    h, udp = services_proxy(httpd_factory, balancers=[
        f"ProxyBeaconBalancer shop service=shop secret=derive:{M2}"])
    start_receiver(h)
    s1 = backend_factory("shop-1")
    ServiceAnnouncer(udp, "shop", member_key(M2, s1.url, "shop")).announce(s1.url)
    wait_in(h, "shop", s1.url)
    assert h.get("/shop/x") == (200, "shop-1")
    # its key for no service is another key
    s2 = backend_factory("shop-2")
    ServiceAnnouncer(udp, "shop", member_key(M2, s2.url)).announce(s2.url)
    wait_dropped(h, "mac_mismatch", 1)
    assert names(h, "shop") == [s1.url]


# -- 2. a member key speaks for its member only -----------------------------

def two_services_one_master(httpd_factory, backend_factory):
    """shop and api derive from the same master; shop-1 and shop-2 in
    shop. Returns (httpd, udp, shop-1's announcer, shop-1, shop-2)."""
    h, udp = services_proxy(httpd_factory, balancers=[
        f"ProxyBeaconBalancer shop service=shop secret=derive:{MASTER}",
        f"ProxyBeaconBalancer api service=api secret=derive:{MASTER}"])
    start_receiver(h)
    s1, s2 = backend_factory("shop-1"), backend_factory("shop-2")
    a1 = ServiceAnnouncer(udp, "shop", member_key(MASTER, s1.url, "shop"))
    a2 = ServiceAnnouncer(udp, "shop", member_key(MASTER, s2.url, "shop"))
    a1.announce(s1.url)
    a2.announce(s2.url)
    wait_in(h, "shop", s1.url)
    wait_in(h, "shop", s2.url)
    return h, udp, a1, s1, s2


@pytest.mark.parametrize("claim", ["another url", "another service",
                                   "another member leaving"])
def test_a_member_key_claiming_anything_else_is_a_mac_mismatch_and_changes_nothing(
        httpd_factory, backend_factory, claim):
    h, udp, stolen, s1, s2 = two_services_one_master(httpd_factory, backend_factory)
    mark = h.log_size()
    if claim == "another url":
        s3 = backend_factory("shop-3")
        stolen.announce(s3.url)
        svc, url = "shop", s3.url
    elif claim == "another service":
        stolen.send(bw.announce(stolen.secret, url=s1.url, ts=stolen.next_ts(),
                                extra=[("svc", "api")]))
        svc, url = "api", s1.url
    else:
        stolen.announce(s2.url, state="leaving")
        svc, url = "shop", s2.url
    wait_dropped(h, "mac_mismatch", 1)
    h.wait_log(drop_line("mac mismatch", f" (member key derived for svc={svc} url='{url}')"),
               since=mark)
    assert names(h, "shop") == sorted([s1.url, s2.url]) and names(h, "api") == []
    assert in_rotation(h, s1.url, "shop") and in_rotation(h, s2.url, "shop")
    # and the key still speaks for its own member
    stolen.announce(s1.url, state="leaving")
    wait_in(h, "shop", s1.url, want_enabled=False)
    assert in_rotation(h, s2.url, "shop")


# -- 3. one member, one key: the canonical url only -------------------------

def test_a_url_not_in_canonical_form_is_refused_in_derive_mode(httpd_factory, backend_factory):
    h, udp = derive_proxy(httpd_factory, [f"derive:{MASTER}"])
    start_receiver(h)
    b = backend_factory("b")
    port = b.url.rsplit(":", 1)[1]
    spellings = [b.url + "/", f"HTTP://127.0.0.1:{port}", f"http://127.0.0.1:{port}/x"]
    mark = h.log_size()
    for i, url in enumerate(spellings):
        # the key derived for the canonical url, and the one for the spelling
        for key in (member_key(MASTER, b.url), bw.member_key(MASTER, "", url)):
            Announcer(udp, secret=key).announce(url)
        if i == 0:
            h.wait_log(drop_line("url not canonical", f" '{url}'"), since=mark)
    # and a datagram without url= cannot be verified in this mode
    Announcer(udp, secret=member_key(MASTER, b.url)).send(
        bw.sign([("host", "h"), ("pid", 1), ("seq", 1), ("ts", bw.now_usec())],
                member_key(MASTER, b.url)))
    wait_dropped(h, "url_not_canonical", 2 * len(spellings) + 1)
    assert dropped(h, "mac_mismatch") == 0
    assert names(h) == []
    # the canonical spelling joins
    Announcer(udp, secret=member_key(MASTER, b.url)).announce(b.url)
    wait_member(h, b.url)


# -- 4. revocation ------------------------------------------------------------

@pytest.mark.parametrize("where,persist", [("ProxyBeaconRevoke", "Off"), ("revoke=", "Off"),
                                           ("ProxyBeaconRevoke", "On")])
def test_a_revoked_member_leaves_at_the_restart_and_stays_out(
        httpd_factory, backend_factory, where, persist):
    h, udp = derive_proxy(httpd_factory, [f"derive:{MASTER}"],
                          extra_config=f"BalancerPersist {persist}")
    start_receiver(h)
    bad, good = backend_factory("bad"), backend_factory("good")
    port = bad.url.rsplit(":", 1)[1]
    revoked_as = f"HTTP://127.0.0.1:{port}/"  # any spelling; stored canonical
    with Heartbeat(Announcer(udp, secret=member_key(MASTER, bad.url)), bad.url), \
            Heartbeat(Announcer(udp, secret=member_key(MASTER, good.url)), good.url):
        wait_member(h, bad.url)
        wait_member(h, good.url)
        if where == "revoke=":
            h.tail_config = receiver_tail(
                udp, [f"derive:{MASTER}"],
                f"ProxyBeaconBalancer cluster revoke=http://127.0.0.1:9,{revoked_as}")
        else:
            h.tail_config += f"ProxyBeaconRevoke {revoked_as}\n"
        h.write_config()
        for how in ("graceful", "graceful", "stop and start"):
            mark = h.log_size()
            restart(h, how)
            h.wait_log(r"BCN00050: listening", since=mark)
            assert bad.url not in names(h), f"{how}: the revoked member is still there"
            assert in_rotation(h, good.url), f"{how}: the member not revoked is out"
            # its heartbeats go on, dropped as revoked, before the MAC
            count = dropped(h, "revoked")
            wait_for(lambda: dropped(h, "revoked") > count, 10, f"{how}: a revoked drop")
            assert bad.url not in names(h), f"{how}: an announcement put it back"
            assert in_rotation(h, good.url)
            assert all(h.get("/") == (200, "good") for _ in range(4))
        h.wait_log(r"BCN00212: not restoring %s in balancer://cluster: revoked"
                   % re.escape(bad.url), since=0)
        assert h.error_log().count("BCN00212") == 1
        h.wait_log(drop_line("revoked", f" '{bad.url}'"), since=0)
        status, metrics = h.get("/beacon-status?metrics")
        assert status == 200 and re.search(
            r'^beacon_datagrams_dropped_total\{[^}]*reason="revoked"\} [1-9]', metrics, re.M), \
            metrics[-3000:]
        # any spelling of a revoked url is revoked, before it is found not canonical
        count = dropped(h, "revoked")
        Announcer(udp, secret=member_key(MASTER, bad.url)).announce(revoked_as)
        wait_for(lambda: dropped(h, "revoked") > count, 10, "the other spelling revoked")
        # the restart that lifts the revocation lets it back in
        h.tail_config = receiver_tail(udp, [f"derive:{MASTER}"])
        h.write_config()
        h.graceful()
        wait_member(h, bad.url)
        assert dropped(h, "mac_mismatch") == 0


def test_revoke_in_one_balancer_takes_the_url_out_of_that_service_only(
        httpd_factory, backend_factory):
    """A member is a (service, url) pair: shop's revoke= leaves the same
    url's membership of api alone."""
    shop_line = f"ProxyBeaconBalancer shop service=shop secret=derive:{MASTER}"
    api_line = f"ProxyBeaconBalancer api service=api secret=derive:{MASTER}"
    h, udp = services_proxy(httpd_factory, balancers=[shop_line, api_line])
    start_receiver(h)
    b = backend_factory("b")
    shop = ServiceAnnouncer(udp, "shop", member_key(MASTER, b.url, "shop"))
    api = ServiceAnnouncer(udp, "api", member_key(MASTER, b.url, "api"))
    with Heartbeat(shop, b.url), Heartbeat(api, b.url):
        wait_in(h, "shop", b.url)
        wait_in(h, "api", b.url)
        h.tail_config = h.tail_config.replace(shop_line, shop_line + f" revoke={b.url}")
        h.write_config()
        mark = h.log_size()
        h.graceful()
        h.wait_log(r"BCN00050: listening", since=mark)
        h.wait_log(r"BCN00212: not restoring %s in balancer://shop: revoked"
                   % re.escape(b.url), since=mark)
        assert names(h, "shop") == [] and in_rotation(h, b.url, "api")
        count = dropped(h, "revoked")
        wait_for(lambda: dropped(h, "revoked") > count, 10, "a revoked drop")
        assert names(h, "shop") == [] and in_rotation(h, b.url, "api")
        assert h.get("/api/x") == (200, "b")
        assert "BCN00212" not in h.error_log().replace(
            f"BCN00212: not restoring {b.url} in balancer://shop", "")


def test_a_plain_key_and_a_master_in_one_set_during_a_migration(
        httpd_factory, backend_factory):
    """Plain keys are tried first, then masters: a backend still on the
    shared key joins (its url in any spelling), one with a member key
    joins, and the member key still speaks for its member only."""
    h, udp = derive_proxy(httpd_factory, [SECRET, f"derive:{MASTER}"])
    start_receiver(h)
    shared, keyed, other = (backend_factory(n) for n in ("shared", "keyed", "other"))
    Announcer(udp).announce(shared.url + "/")
    keyed_ann = Announcer(udp, secret=member_key(MASTER, keyed.url))
    keyed_ann.announce(keyed.url)
    wait_member(h, shared.url)
    wait_member(h, keyed.url)
    keyed_ann.announce(other.url)
    wait_dropped(h, "mac_mismatch", 1)
    assert names(h) == sorted([shared.url, keyed.url])


# -- 5. two masters during a rotation ---------------------------------------

def test_two_masters_during_a_rotation_then_the_old_one_removed(
        httpd_factory, backend_factory):
    h, udp = derive_proxy(httpd_factory, [f"derive:{OLD}", f"derive:{NEW}"])
    start_receiver(h)
    a, b = backend_factory("a"), backend_factory("b")
    old_a = Announcer(udp, secret=member_key(OLD, a.url))
    old_a.announce(a.url)
    Announcer(udp, secret=member_key(NEW, b.url)).announce(b.url)
    wait_member(h, a.url)
    wait_member(h, b.url)
    assert dropped(h, "mac_mismatch") == 0

    h.tail_config = receiver_tail(udp, [f"derive:{NEW}"])
    h.write_config()
    mark = h.log_size()
    h.graceful()
    h.wait_log(r"BCN00050: listening", since=mark)
    mark = h.log_size()
    old_a.announce(a.url, state="leaving")
    wait_dropped(h, "mac_mismatch", 1)
    h.wait_log(drop_line("mac mismatch", f" (member key derived for svc=(none) url='{a.url}')"),
               since=mark)
    assert in_rotation(h, a.url), "a datagram under the removed master took effect"
    new_a = Announcer(udp, secret=member_key(NEW, a.url))
    new_a.last_ts = old_a.last_ts
    new_a.announce(a.url, state="leaving")
    wait_member(h, a.url, want_enabled=False)
    assert in_rotation(h, b.url)


# -- 6. the module as sender with a member key --------------------------------

@pytest.mark.skipif(not BEACONCTL.exists(), reason="build/beaconctl is not built")
@pytest.mark.parametrize("service", [None, "shop"])
def test_the_module_sender_signs_with_its_member_key_and_joins(httpd_factory, service):
    balancer = "ProxyBeaconBalancer cluster" + (f" service={service}" if service else "")
    proxy, udp = derive_proxy(httpd_factory, [f"derive:{MASTER}"] if not service else [SECRET],
                              balancer + (f" secret=derive:{MASTER}" if service else ""))
    start_receiver(proxy)
    sender = sender_httpd(httpd_factory, [f"127.0.0.1:{udp}"],
                          extra=f"ProxyBeaconService {service}\n" if service else "")
    # ProxyBeaconAdvertise in another spelling: the sender announces it canonical
    spelled = f"HTTP://127.0.0.1:{sender.port}/"
    key, url = derive_key(MASTER, spelled, service)
    assert url == f"http://127.0.0.1:{sender.port}"
    sender.tail_config = re.sub(r"ProxyBeaconSecret \S+", f"ProxyBeaconSecret {key}",
                                sender.tail_config.replace(f"ProxyBeaconAdvertise {url}",
                                                           f"ProxyBeaconAdvertise {spelled}"))
    assert spelled in sender.tail_config
    sender.start()
    wait_member(proxy, url)
    assert proxy.get("/index.html") == (200, f"backend {sender.port}")
    assert dropped(proxy, "mac_mismatch") == 0 and dropped(proxy, "url_not_canonical") == 0


def test_a_sender_whose_first_secret_is_a_master_fails_apache2_t(httpd_factory):
    out = refused_by_apache2_t(
        httpd_factory, "sender with a master",
        f"ProxyBeaconAddress 127.0.0.1:{free_port()}\n"
        "ProxyBeaconAdvertise http://127.0.0.1:8080\n"
        f"ProxyBeaconSecret derive:{MASTER}\nProxyBeaconSecret {NEW}\n",
        "ProxyBeaconSecret: a sender signs with its first secret, and derive: makes "
        "it a master, which signs nothing: give this backend its member key "
        "(beaconctl derive-key --service SVC --url URL prints it)")
    assert len([line for line in out.splitlines() if "derive:" in line]) == 1, out
    assert MASTER[4:] not in out


# -- 7. configuration errors --------------------------------------------------

RECEIVER = "ProxyBeaconListen 127.0.0.1:5555\n"


@pytest.mark.parametrize("config,message", [
    pytest.param(RECEIVER + "ProxyBeaconBalancer cluster\n"
                 'ProxyBeaconSecret "derive:some passphrase longer than 16"\n',
                 "ProxyBeaconSecret: a master must be hex: and 32 hex digits; "
                 "a passphrase is refused for a master", id="passphrase master"),
    pytest.param(RECEIVER + 'ProxyBeaconBalancer cluster service=shop '
                 '"secret=derive:some passphrase longer than 16"\n',
                 "a master must be hex: and 32 hex digits", id="passphrase master in secret="),
    pytest.param(RECEIVER + "ProxyBeaconBalancer cluster\n"
                 f"ProxyBeaconSecret derive:{MASTER}\n"
                 "ProxyBeaconRevoke http://127.0.0.1:9 not-a-url\n",
                 "ProxyBeaconRevoke: 'not-a-url' is no member url", id="ProxyBeaconRevoke"),
    pytest.param(RECEIVER + f"ProxyBeaconBalancer cluster secret=derive:{MASTER} revoke=nope\n",
                 "ProxyBeaconBalancer: revoke= 'nope' is no member url", id="revoke="),
    pytest.param(RECEIVER + f"ProxyBeaconBalancer cluster secret=derive:{MASTER} "
                 "revoke=http://127.0.0.1:9,nope\n",
                 "ProxyBeaconBalancer: revoke= 'nope' is no member url",
                 id="revoke= list, bad last"),
    pytest.param(RECEIVER + f"ProxyBeaconBalancer cluster secret=derive:{MASTER} "
                 "revoke=nope,http://127.0.0.1:9\n",
                 "ProxyBeaconBalancer: revoke= 'nope' is no member url",
                 id="revoke= list, bad first"),
])
def test_a_bad_master_or_revoked_url_fails_apache2_t(httpd_factory, config, message):
    out = refused_by_apache2_t(httpd_factory, message, config, message)
    assert "some passphrase" not in out  # a secret is never echoed


def test_a_passphrase_in_a_masters_file_fails_apache2_t(httpd_factory, workdir):
    path = workdir / "master.secret"
    path.write_text("some passphrase longer than 16\n")
    path.chmod(0o600)
    out = refused_by_apache2_t(
        httpd_factory, "passphrase master in a file",
        f"{RECEIVER}ProxyBeaconBalancer cluster\nProxyBeaconSecret derive:file:{path}\n",
        "a master must be hex: and 32 hex digits")
    assert "some passphrase" not in out
