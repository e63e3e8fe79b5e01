# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A sender repeats state=leaving within the first second: one lost
datagram does not keep a departed backend in rotation (with the default
ProxyBeaconTimeout 0, for ever)."""

import os
import signal
import socket
import threading
import time

import pytest

import beacon_wire as bw
from beacon_env import Periodic, make_proxy, sender_httpd, wait_member
from httpd import free_port, pid_gone, wait_for

pytestmark = pytest.mark.beacon


class LossyRelay(Periodic):
    """Forwards datagrams to a receiver, except the first state=leaving,
    which it drops as the network might; keeps what it forwarded."""

    def __init__(self, to_port):
        super().__init__(0)
        self.port = free_port()
        self.to = ("127.0.0.1", to_port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.settimeout(0.1)
        self.dropped, self.forwarded = [], []
        self.lock = threading.Lock()

    def tick(self):
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return
        with self.lock:
            if bw.fields(data).get("state") == "leaving" and not self.dropped:
                self.dropped.append(data)
                return
            self.forwarded.append(data)
        bw.send(data, self.to)

    def leavings(self):
        with self.lock:
            return [bw.fields(d) for d in self.dropped + self.forwarded
                    if bw.fields(d).get("state") == "leaving"]


@pytest.fixture
def relay_factory():
    made = []

    def make(port):
        made.append(LossyRelay(port).__enter__())
        return made[-1]
    yield make
    for r in made:
        r.__exit__(None, None, None)
        r.sock.close()


@pytest.mark.parametrize("mpm,how", [("event", "stop"), ("event", "graceful-stop"),
                                     ("prefork", "stop")])
def test_a_stop_whose_first_leaving_is_lost_still_leaves_rotation(
        httpd_factory, relay_factory, mpm, how):
    proxy, ann = make_proxy(httpd_factory)  # timeout 0: only a leaving disables
    relay = relay_factory(ann.addr[1])
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{relay.port}"], interval="30",
                           mpm=mpm)
    url = f"http://127.0.0.1:{backend.port}"
    backend.start()
    wait_member(proxy, url)

    pids = [backend.pid] + backend.child_pids()
    stopped = time.monotonic()
    if how == "stop":
        backend.stop()
    else:
        os.kill(backend.pid, signal.SIGWINCH)
        wait_for(lambda: all(pid_gone(p) for p in pids), 10, "the graceful stop")
        backend.pid = None
    took = time.monotonic() - stopped
    assert relay.dropped, "the relay saw no state=leaving"
    wait_member(proxy, url, want_enabled=False, timeout=5)
    said = relay.leavings()
    assert len(said) == 4, said
    ts = [int(d["ts"]) for d in said]
    assert ts == sorted(set(ts)), f"each repeat is a new announcement: {ts}"
    assert int(said[-1]["ts"]) - int(said[0]["ts"]) < 1_500_000, said
    assert took < 5, f"the stop took {took:.1f} s"
    assert "BCN00036: backend leaving" in proxy.error_log()
    assert proxy.error_log().count("BCN00036") == 1, "a repeat is nothing new"
