# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Shared pieces of the module's integration tests (and the bench's):
receiver and sender configs, a whole sender (sender_httpd), and an
announcer that speaks the wire format to a receiver."""

import threading

import beacon_wire as bw
from httpd import free_port, wait_for

SECRET = "hex:00112233445566778899aabbccddeeff"


# extra_config for an event MPM of one child: every request is served by
# the child that also owns the receiver.
ONE_CHILD = ("StartServers 1\nServerLimit 1\nThreadsPerChild 25\n"
             "MaxRequestWorkers 25\nMinSpareThreads 1\nMaxSpareThreads 25\n")


def receiver_config(udp_port, balancer="cluster", timeout=None, secret=SECRET,
                    listen=None, extra=""):
    """The directives of a receiver; balancer=None is log-only mode."""
    lines = [f"ProxyBeaconListen {listen if listen is not None else f'127.0.0.1:{udp_port}'}"]
    if balancer:
        lines.append(f"ProxyBeaconBalancer {balancer}")
    if timeout is not None:
        lines.append(f"ProxyBeaconTimeout {timeout}")
    if secret:
        lines.append(f"ProxyBeaconSecret {secret}")
    return "\n".join(lines) + "\n" + extra


def sender_httpd(httpd_factory, targets, advertise=True, interval="1", mpm="event",
                 extra=""):
    """A backend apache2 that loads no proxy module at all, only ours;
    extra: more directives for its main server. (The bench's senders too.)"""
    h = httpd_factory(mpm=mpm)
    lines = [line for line in h.modules_config().splitlines()
             if line.startswith(("LoadModule mpm_", "LoadModule authz_core",
                                 "LoadModule proxy_beacon"))]
    h.modules_config = lambda: "\n".join(lines) + "\n"
    h.proxy_config = h.proxypass_config = h.manager_config = ""
    h.tail_config = (f"ProxyBeaconAddress {' '.join(targets)}\n"
                     + (f"ProxyBeaconAdvertise http://127.0.0.1:{h.port}\n" if advertise else "")
                     + f"ProxyBeaconInterval {interval}\n"
                     + f"ProxyBeaconSecret {SECRET}\n" + extra)
    (h.dir / "htdocs" / "index.html").write_text(f"backend {h.port}")
    return h


def refused_by_apache2_t(httpd_factory, case, config, message):
    """apache2 -t on config fails saying message, and what it said. A
    "%s:%d" in message stands for the file and line of the first directive
    named by message's first word (where a cross-directive check points)."""
    h = httpd_factory(tail_config=config)
    rc, out = h.check_config()
    if "%s:%d" in message:
        text = h.config_text()
        line = text[:text.index(message.split()[0] + " ")].count("\n") + 1
        message = message % (h.conf_path, line)
    assert rc != 0, f"{case}: apache2 -t passed:\n{out}"
    assert message in out, out
    return out


def restart(h, how):
    """how="graceful": a graceful restart; anything else: stop, then start."""
    if how == "graceful":
        h.graceful()
    else:
        h.stop()
        h.start()


def start_receiver(h):
    """Starts h and waits until its receiver listens: datagrams sent before
    that are lost, as they would be in production."""
    h.start()
    h.wait_log(r"BCN00050: listening for beacons on udp ")
    return h


def make_proxy(httpd_factory, timeout=None, balancer="cluster", **kwargs):
    """(httpd, Announcer) for a started proxy whose receiver is listening."""
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(udp, balancer, timeout), **kwargs)
    start_receiver(h)
    return h, Announcer(udp)


class Announcer:
    """Sends signed announcements to one receiver with a strictly rising ts."""

    def __init__(self, port, host="127.0.0.1", secret=SECRET):
        self.addr = (host, port)
        self.secret = secret
        self.last_ts = 0

    def next_ts(self):
        self.last_ts = max(bw.now_usec(), self.last_ts + 1)
        return self.last_ts

    def announce(self, url=None, ts=None, **fields):
        """Sends one announcement and returns its bytes (for replays)."""
        datagram = bw.announce(self.secret, url=url,
                               ts=ts if ts is not None else self.next_ts(), **fields)
        self.send(datagram)
        return datagram

    def send(self, datagram):
        bw.send(datagram, self.addr)


class Periodic:
    """Calls self.tick() every period seconds from a thread, as a context
    manager: started on entry, stopped (and joined) on exit."""

    def __init__(self, period):
        self.period = period
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stopped.is_set():
            self.tick()
            self.stopped.wait(self.period)

    def tick(self):
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(10)


class Heartbeat(Periodic):
    """Announces url every period seconds, like a live backend."""

    def __init__(self, announcer, url, period=0.2):
        super().__init__(period)
        self.announcer, self.url = announcer, url

    def tick(self):
        self.announcer.announce(self.url)


def enabled(worker):
    return "Ok" in worker["flags"] and "Dis" not in worker["flags"]


def wait_member(h, url, want_enabled=True, timeout=10):
    """Polls balancer-manager until url is a member in the wanted state."""
    def state():
        for w in h.balancer_members():
            if w["name"] == url and enabled(w) == want_enabled:
                return w
        return None
    return wait_for(state, timeout,
                    f"{url} {'enabled' if want_enabled else 'disabled'} in balancer-manager")


def fetch_until_each_answers(h, names, timeout=10, path="/"):
    """GETs path until every backend in names has answered."""
    seen = set()

    def all_seen():
        status, body = h.get(path)
        if status == 200:
            seen.add(body)
        return seen >= set(names)
    wait_for(all_seen, timeout, f"answers from all of {sorted(names)}, seen {sorted(seen)}")
    return seen
