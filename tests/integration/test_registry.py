# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The member registry is sound: one per receiver (virtual host and bind
address), its persisted file checked whole before it is read, every entry
checked before it is trusted, and the file for root only."""

import hashlib
import os
import re
import stat

import pytest

from beacon_env import (Announcer, SECRET, receiver_config, restart, start_receiver,
                        wait_member)
from httpd import free_port, get_from, wait_for

pytestmark = pytest.mark.beacon

DIGEST, DESC = 16, 16  # mod_slotmem_shm: MD5 of the data, then its description


def registry_file(h):
    [path] = (h.dir / "run").glob("slotmem-shm-beacon-????????.shm.persist")
    return path


def claims_file(h):
    """The registry's second file: the contexts each member claims."""
    [path] = (h.dir / "run").glob("slotmem-shm-beacon-????????-ctx.shm.persist")
    return path


def proxy_with_member(httpd_factory, backend_factory, **kwargs):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="20"), **kwargs)
    start_receiver(h)
    b = backend_factory("b")
    ann = Announcer(udp)
    ann.announce(b.url)
    wait_member(h, b.url)
    h.stop()
    return h, ann, b


def reseal(data):
    """The file with a digest that matches its (changed) data, as someone
    who can write DefaultRuntimeDir can make it."""
    body = data[:-(DIGEST + DESC)]
    return body + hashlib.md5(body).digest() + data[-DESC:]


def put_string(data, old, new):
    """Overwrites the NUL-terminated string old with new (and its NUL)."""
    at = data.index(old.encode() + b"\0")
    return data[:at] + new.encode() + b"\0" + data[at + len(new) + 1:]


@pytest.mark.parametrize("damage", ["cut short", "corrupt", "another layout"])
def test_an_unsound_registry_file_is_set_aside_and_the_server_serves(
        httpd_factory, backend_factory, damage):
    h, ann, b = proxy_with_member(httpd_factory, backend_factory)
    path = registry_file(h)
    data = path.read_bytes()
    if damage == "cut short":
        data = data[: len(data) // 2]
    elif damage == "corrupt":
        data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
    else:
        data = data[:-DESC - DIGEST] + b"\0" * 64 + data[-DESC - DIGEST:]
    path.write_bytes(data)
    mark = h.log_size()
    start_receiver(h)
    h.wait_log(r"BCN00085: the persisted member registry %s is unsound \([^)]+\): "
               r"set aside as %s\.bad-\d+" % (re.escape(str(path)), re.escape(str(path))),
               since=mark)
    assert list(path.parent.glob(path.name + ".bad-*")), "the bad file is kept for a look"
    assert b.url not in [w["name"] for w in h.balancer_members()]
    ann.announce(b.url)
    wait_member(h, b.url)
    assert h.get("/") == (200, "b")


@pytest.mark.parametrize("forged", ["unix:/run/x.sock|http://127.0.0.1:1",
                                    "http://127.0.0.1:1/a/path",
                                    "another balancer"])
def test_a_forged_entry_is_skipped_and_the_server_serves(httpd_factory, backend_factory,
                                                         forged):
    """A file whose digest is right (anyone who can write the run directory
    can make one) but whose entry is not a member this receiver could have
    made: skipped with a warning, never restored."""
    h, ann, b = proxy_with_member(httpd_factory, backend_factory)
    path = registry_file(h)
    data = path.read_bytes()
    if forged == "another balancer":
        data = put_string(data, "balancer://cluster", "balancer://other")
    else:
        data = put_string(data, b.url, forged)
    path.write_bytes(reseal(data))
    mark = h.log_size()
    start_receiver(h)
    h.wait_log(r"BCN00084: skipped 1 entry of the member registry of "
               r"balancer://cluster", since=mark)
    names = [w["name"] for w in h.balancer_members()]
    assert names == [], names
    ann.announce(b.url)
    wait_member(h, b.url)
    assert h.get("/") == (200, "b")


def test_the_registry_file_is_for_root_only(httpd_factory, backend_factory):
    if os.geteuid() != 0:
        pytest.skip("httpd's parent is not root here: the file stays as httpd makes it")
    h, _, _ = proxy_with_member(httpd_factory, backend_factory)
    for path in (registry_file(h), claims_file(h)):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == 0o600, (path, oct(mode))


def test_an_unsound_claims_file_is_set_aside_and_the_members_stay(httpd_factory,
                                                                  backend_factory):
    h, ann, b = proxy_with_member(httpd_factory, backend_factory)
    path = claims_file(h)
    path.write_bytes(path.read_bytes()[:1000])
    mark = h.log_size()
    start_receiver(h)
    h.wait_log(r"BCN00085: the persisted member registry %s is unsound \([^)]+\): "
               r"set aside as %s\.bad-\d+" % (re.escape(str(path)), re.escape(str(path))),
               since=mark)
    # the members' own file was whole: they are back before any announcement
    assert b.url in [w["name"] for w in h.balancer_members()]


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
def test_two_virtual_hosts_with_balancers_of_one_name_stay_apart(
        httpd_factory, backend_factory, how):
    """Each virtual host has its own balancer://cluster, secret and receiver,
    on one UDP port of two addresses: after a restart each gets back its own
    member, never the other's."""
    secrets = ["hex:" + "1" * 32, "hex:" + "2" * 32]
    ports, udp, vhosts = [free_port(), free_port()], free_port(), ""
    for i in range(2):
        vhosts += (f"Listen 127.0.0.1:{ports[i]}\n<VirtualHost 127.0.0.1:{ports[i]}>\n"
                   f"    ServerName v{i}.test\n"
                   "    <Proxy balancer://cluster>\n        ProxySet growth=2\n    </Proxy>\n"
                   "    ProxyPass / balancer://cluster/\n"
                   + "".join("    " + line + "\n" for line in receiver_config(
                       udp, secret=secrets[i], timeout="20",
                       listen=f"127.0.0.{i + 1}:{udp}").splitlines())
                   + "</VirtualHost>\n")
    h = httpd_factory(tail_config=vhosts)
    # no balancer in the main server: virtual hosts would inherit it
    h.proxy_config, h.proxypass_config = "", "ProxyPass /balancer-manager !\n"
    h.start()
    for i in range(2):
        h.wait_log(r"listening for beacons on udp 127\.0\.0\.%d:%d" % (i + 1, udp), since=0)
    backends = [backend_factory("b0"), backend_factory("b1")]
    for i in range(2):
        Announcer(udp, host=f"127.0.0.{i + 1}", secret=secrets[i]).announce(backends[i].url)
        h.wait_log(r"added backend %s" % re.escape(backends[i].url), since=0)
    assert h.error_log().count("BCN00030") == 2
    for i in range(2):
        assert {get_from(ports[i]) for _ in range(6)} == {(200, f"b{i}")}

    mark = h.log_size()
    restart(h, how)
    for _ in range(2):
        h.wait_log(r"BCN00011: restored 1 member\(s\) of balancer://cluster", since=mark)
    for i in range(2):
        answers = {get_from(ports[i]) for _ in range(6)}
        assert answers == {(200, f"b{i}")}, f"virtual host {i} answered {answers}"


URL_MAX = 300  # BEACON_URL_MAX: the registry's url fields
RECYCLING = 2  # beacon_entry_state: the slot is being renamed


@pytest.mark.parametrize("persist", ["Off", "On"])
def test_a_rename_left_half_done_is_finished(httpd_factory, backend_factory, persist):
    """The registry is written ahead of a rename: an owner that dies in the
    middle leaves the entry RECYCLING, with the new url beside the old,
    and whoever reads it next finishes the rename; the slot stays out of
    rotation until the new url announces."""
    h, ann, old = proxy_with_member(httpd_factory, backend_factory,
                                    extra_config=f"BalancerPersist {persist}")
    new = backend_factory("new")
    path = registry_file(h)
    data = bytearray(path.read_bytes())
    entry = data.index((0x42434E52).to_bytes(4, "little"))  # the entry's magic
    data[entry + 8:entry + 12] = RECYCLING.to_bytes(4, "little")
    url_at = data.index(old.url.encode() + b"\0")
    next_at = url_at + URL_MAX
    data[next_at:next_at + len(new.url) + 1] = new.url.encode() + b"\0"
    path.write_bytes(reseal(bytes(data)))
    mark = h.log_size()
    start_receiver(h)
    h.wait_log(r"BCN00087: finished renaming a slot of balancer://cluster to %s"
               % re.escape(new.url), since=mark)
    names = {w["name"]: w for w in h.balancer_members()}
    assert list(names) == [new.url], names
    assert "Dis" in names[new.url]["flags"], "a half-renamed slot came back in rotation"
    ann.announce(new.url)
    wait_member(h, new.url)
    assert h.get("/") == (200, "new")
