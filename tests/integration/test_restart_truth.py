# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Restarts keep the truth: a member that was out of rotation before a
restart (evicted, or it said it was leaving) comes back out of rotation,
and its next announcement puts it back."""

import pytest

from beacon_env import (Announcer, Heartbeat, enabled, receiver_config, start_receiver,
                        wait_member)
from httpd import free_port

pytestmark = pytest.mark.beacon


def restart(h, how):
    if how == "graceful":
        h.graceful()
    else:
        h.stop()
        h.start()


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
@pytest.mark.parametrize("persist", ["Off", "On"])
@pytest.mark.parametrize("left", ["evicted", "leaving"])
def test_a_member_out_of_rotation_stays_out_across_a_restart(
        httpd_factory, backend_factory, left, persist, how):
    udp = free_port()
    timeout = "1" if left == "evicted" else "20"
    h = httpd_factory(extra_config=f"BalancerPersist {persist}",
                      tail_config=receiver_config(udp, timeout=timeout))
    start_receiver(h)
    ann = Announcer(udp)
    b = backend_factory("b")
    ann.announce(b.url)
    wait_member(h, b.url)
    if left == "leaving":
        ann.announce(b.url, state="leaving")
    wait_member(h, b.url, want_enabled=False)

    mark = h.log_size()
    restart(h, how)
    h.wait_log(r"BCN00011: restored 1 member\(s\)", since=mark)
    assert not enabled(h.worker(b.url)), "a member that was out came back in rotation"
    # announcing as a live backend does: one datagram may still reach the
    # old generation's receiver, in the moment before it stops
    with Heartbeat(ann, b.url, period=0.3):
        wait_member(h, b.url)
    assert h.get("/") == (200, "b")


def test_a_registry_entry_of_an_older_layout_is_skipped_not_trusted(
        httpd_factory, backend_factory):
    """mod_slotmem_shm reads a persisted file without its digest (an older
    one, or one written by hand) without a word; beacon keeps only entries
    of its own layout, says how many it skipped, and the member joins again
    with its next announcement."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, timeout="20"))
    start_receiver(h)
    b = backend_factory("b")
    ann = Announcer(udp)
    ann.announce(b.url)
    wait_member(h, b.url)
    h.stop()
    [registry] = (h.dir / "run").glob("slotmem-shm-proxy_beacon_*.persist")
    data = registry.read_bytes()
    magic = (0x42434E32).to_bytes(4, "little")
    assert data.count(magic) == 1, "one entry in use"
    # the layout of the release before (an in-use flag of 1), and the file
    # cut before its digest and description (16 + 24 bytes), as an older
    # mod_slotmem_shm wrote it
    registry.write_bytes(data.replace(magic, (1).to_bytes(4, "little"))[:-40])
    mark = h.log_size()
    start_receiver(h)
    h.wait_log(r"BCN00084: skipped 1 entry of the member registry of "
               r"balancer://cluster that this release cannot read", since=mark)
    assert b.url not in [w["name"] for w in h.balancer_members()]
    ann.announce(b.url)
    wait_member(h, b.url)
    assert h.get("/") == (200, "b")
