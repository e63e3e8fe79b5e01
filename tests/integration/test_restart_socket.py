# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The receiver's UDP socket across restarts: the parent opens it once and
keeps it, as httpd keeps its listeners, so that what backends send while
the watchdog's owner is handed over waits in the kernel's buffer."""

import os
import signal
import socket
import time

import pytest

from beacon_env import Announcer, enabled, receiver_config, start_receiver, wait_member
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon

# When the datagrams go out after SIGUSR1: before the new generation's owner
# exists (about 0.1 s to 1.1 s without a socket, before the parent kept it),
# and after.
OFFSETS = (0.005, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.45, 0.5)


def fake_url():
    """An origin nobody listens on: membership, not traffic, is the point."""
    return f"http://127.0.0.1:{free_port()}"


def at(started, offset):
    """Waits for the moment offset seconds after started (a schedule)."""
    wait_for(lambda: time.monotonic() >= started + offset, offset + 1,
             f"{offset} s after the signal", interval=0.001)


def udp_bindable(port, host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("mpm", ["event", "prefork"])
def test_nothing_sent_during_a_graceful_restart_is_lost(httpd_factory, mpm):
    """Leavings (the default ProxyBeaconTimeout 0 keeps a member whose
    leaving is lost in rotation for ever) and first announcements, spread
    over the half second after SIGUSR1: every one is received."""
    udp = free_port()
    n = len(OFFSETS)
    h = httpd_factory(mpm=mpm, growth=2 * n, tail_config=receiver_config(udp))
    start_receiver(h)
    ann = Announcer(udp)
    leavers = [fake_url() for _ in range(n)]
    joiners = [fake_url() for _ in range(n)]
    for url in leavers:
        ann.announce(url)
    for url in leavers:
        wait_member(h, url)

    mark = h.log_size()
    os.kill(h.pid, signal.SIGUSR1)
    started = time.monotonic()
    for offset, leaver, joiner in zip(OFFSETS, leavers, joiners):
        at(started, offset)
        ann.announce(leaver, state="leaving")
        ann.announce(joiner)
    h.wait_log(r"(AH00489|AH00163): .* resuming normal operations", since=mark)

    def lost():
        members = {w["name"]: enabled(w) for w in h.balancer_members()}
        return ([u for u in leavers if members.get(u) is not False]
                + [u for u in joiners if members.get(u) is not True])
    try:
        wait_for(lambda: not lost(), 10, "every datagram to take effect")
    except AssertionError:
        pytest.fail(f"{len(lost())} of {2 * n} datagrams lost: {lost()}")


def test_a_stop_and_start_releases_the_port_and_binds_it_again(httpd_factory):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp))
    start_receiver(h)
    h.stop()
    assert udp_bindable(udp), "the stopped httpd still holds its beacon port"
    mark = h.log_size()
    start_receiver(h)
    h.wait_log(r"BCN00050: listening for beacons on udp 127\.0\.0\.1:%d " % udp, since=mark)
    url = fake_url()
    Announcer(udp).announce(url)
    wait_member(h, url)


def test_a_graceful_restart_to_another_port_releases_the_old_one(httpd_factory):
    old, new = free_port(), free_port()
    h = httpd_factory(tail_config=receiver_config(old))
    start_receiver(h)
    assert not udp_bindable(old)
    h.tail_config = receiver_config(new)
    h.write_config()
    mark = h.log_size()
    h.graceful()
    h.wait_log(r"BCN00050: listening for beacons on udp 127\.0\.0\.1:%d " % new, since=mark)
    url = fake_url()
    Announcer(new).announce(url)
    wait_member(h, url)
    # the old generation's children still hold it until they exit
    wait_for(lambda: udp_bindable(old), 10, f"udp {old} to be released")


def test_a_config_test_opens_no_socket(httpd_factory):
    """apache2 -t runs no post_config: a port held by someone else is no
    error there, and nothing is bound."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("127.0.0.1", udp))
        rc, out = h.check_config()
    assert rc == 0 and "Syntax OK" in out, out
    assert "udp" not in out, out


def test_a_port_taken_at_start_is_reported_as_before(httpd_factory):
    """The parent cannot bind: it says so, httpd starts, and the owner
    retries and reports as it always did (BCN00052 after its fast retries)."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp))
    h.expect_errors("BCN00052")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("127.0.0.1", udp))
        h.start()
        h.wait_log(r"BCN00130: cannot bind udp 127\.0\.0\.1:%d before the children start" % udp,
                   since=0)
        h.wait_log(r"BCN00052: cannot listen for beacons on udp 127\.0\.0\.1:%d; retrying" % udp,
                   since=0)
