# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The registry is sized from its balancer's capacity (issue 25, item 2;
issue 32): 256 entries plus that balancer's slots=. A persisted registry of
another size (slots= added, changed or removed) is carried into the new
one, members and their claims, logged once; nothing is lost."""

import re

import pytest

from beacon_env import Announcer, receiver_config, start_receiver, wait_member
from httpd import free_port
from test_registry import claims_file, registry_file, reseal

pytestmark = pytest.mark.beacon

DEFAULT = 256         # BEACON_TABLE_CAPACITY: a receiver without slots=
FIXED = 8 + 16 + 16   # mod_slotmem_shm: the free count, the digest, the description
BALANCER = "cluster contexts=/shop"
PLACEHOLDER = re.compile(r"http://slot-\d+\.beacon\.invalid")


def proxy_with(httpd_factory, balancer, backends):
    """A started receiver of balancer whose members are backends, each
    claiming /shop."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, balancer, timeout="60"))
    h.udp = udp
    start_receiver(h)
    ann = Announcer(udp)
    for b in backends:
        ann.announce(b.url, extra=[("ctx", "/shop")])
    for b in backends:
        wait_member(h, b.url)
    return h


def restart_with(h, balancer):
    """Stopped, configured anew, started: the log since the start."""
    h.stop()
    h.tail_config = receiver_config(h.udp, balancer, timeout="60")
    mark = h.log_size()
    start_receiver(h)
    return mark


def wait_carried(h, mark, before, after, n):
    h.wait_log(r"BCN00170: member registry of .+: carried %d entries from a "
               r"registry of %d entries to one of %d \(slots= changed\)"
               % (n, before, after), since=mark)


@pytest.mark.parametrize("slots", [20, 3000])
def test_members_are_carried_when_slots_are_added_and_removed(httpd_factory,
                                                              backend_factory, slots):
    backends = [backend_factory(name) for name in ("a", "b", "c")]
    h = proxy_with(httpd_factory, BALANCER, backends)
    h.stop()
    small = registry_file(h).stat().st_size
    assert (small - FIXED) % (DEFAULT + 1) == 0, small
    entry = (small - FIXED) // (DEFAULT + 1)  # one entry's bytes and its in-use byte

    # slots= added: the old file describes 256 entries, the registry has more
    mark = restart_with(h, f"{BALANCER} slots={slots}")
    wait_carried(h, mark, DEFAULT, DEFAULT + slots, len(backends))
    # back before any announcement (none was sent since the stop), each in
    # a reserved slot: the others are still placeholders
    names = [w["name"] for w in h.balancer_members()]
    placeholders = [n for n in names if PLACEHOLDER.fullmatch(n)]
    assert sorted(set(names) - set(placeholders)) == sorted(b.url for b in backends), names
    assert len(placeholders) == slots - len(backends), names
    h.stop()
    assert registry_file(h).stat().st_size == FIXED + (DEFAULT + slots + 1) * entry
    assert claims_file(h).read_bytes().count(b"/shop\0") == len(backends)

    # slots= removed: carried back, still nothing lost
    mark = restart_with(h, BALANCER)
    wait_carried(h, mark, DEFAULT + slots, DEFAULT, len(backends))
    names = [w["name"] for w in h.balancer_members()]
    assert sorted(names) == sorted(b.url for b in backends), names
    assert "BCN00171" not in h.error_log()[mark:], "nothing was dropped"
    h.stop()
    assert registry_file(h).stat().st_size == small
    assert claims_file(h).read_bytes().count(b"/shop\0") == len(backends)


def test_an_unchanged_size_carries_nothing(httpd_factory, backend_factory):
    """The usual restart: the file is restored as it is, no carry line."""
    b = backend_factory("b")
    h = proxy_with(httpd_factory, f"{BALANCER} slots=5", [b])
    mark = restart_with(h, f"{BALANCER} slots=5")
    assert b.url in [w["name"] for w in h.balancer_members()]
    h.stop()
    assert "BCN00170" not in h.error_log()[mark:]


MARK = 3  # beacon_entry_state: a replay mark


def fill_with_marks(path, member_url, slots):
    """Every free entry of the file made a replay mark of a url of its
    own, from a copy of the member's entry (resealed)."""
    data = bytearray(path.read_bytes())
    entry = (len(data) - FIXED) // (slots + 1) - 1
    start = 8 + entry  # the free count, then the header slot
    magic = (0x42434E52).to_bytes(4, "little")
    at = data.index(magic, start)
    member = bytes(data[at:at + entry])
    url_at = member.index(member_url.encode() + b"\0")
    for k in range(slots):
        slot = start + k * entry
        if slot == at:
            continue
        copy = bytearray(member)
        copy[8:12] = MARK.to_bytes(4, "little")
        url = f"http://127.0.0.1:{1000 + k}".encode() + b"\0"
        copy[url_at:url_at + len(url)] = url
        data[slot:slot + entry] = copy
    path.write_bytes(reseal(bytes(data)))


def test_a_smaller_registry_keeps_the_members_first(httpd_factory, backend_factory):
    """More entries than the new registry holds: the members are kept,
    then as many replay marks as fit, and the rest is dropped, said so."""
    b = backend_factory("b")
    h = proxy_with(httpd_factory, f"{BALANCER} slots=5", [b])
    h.stop()
    fill_with_marks(registry_file(h), b.url, DEFAULT + 5)
    mark = restart_with(h, BALANCER)
    wait_carried(h, mark, DEFAULT + 5, DEFAULT, DEFAULT)
    h.wait_log(r"BCN00171: member registry of .+: 5 entries did not fit in %d and "
               r"were dropped \(members are kept first" % DEFAULT, since=mark)
    assert b.url in [w["name"] for w in h.balancer_members()]
