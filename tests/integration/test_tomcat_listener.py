# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The Tomcat Listener (issue 35, contrib/tomcat): Debian's Tomcat 10
(tomcat.py) with build/beacon-tomcat.jar in its CATALINA_BASE/lib and one
<Listener className="modproxybeacon.tomcat.BeaconListener" .../> line in
server.xml, announcing itself to a receiver with no beaconctl beside it.
The proxy is test_tomcat.py's: balancer `app`, sticky on Tomcat's session,
contexts= the applications it may route, no ProxyPass at all.

- Two Tomcats join with their jvmRoute, and a session sticks.
- An application directory moved into webapps/ while Tomcat runs (its
  Host scans every second) is routed within 2 s; moved out, the proxy
  answers 404 itself within 2 s, and a client hitting it meanwhile never
  gets a 5xx, nor a 404 from a Tomcat that no longer has it.
- A Tomcat stopped by SIGTERM under a client loop fails no request, and
  the proxy takes it out of rotation before its port closes.
- A wrong secret is a `mac mismatch` at the proxy, and Tomcat's log shows
  nothing of it; a bad attribute fails Tomcat's start with one BCN00310
  line naming it.

Tomcat's SEVERE and WARNING lines fail a test (as in test_tomcat.py),
but for the Tomcat of a start that must fail. Without Tomcat, Java or
the jar the tests fail, naming what is missing, unless BEACON_SKIP_TOMCAT=1
says this machine is meant to go without: then they are skipped."""

import hashlib
import os
import re
import socket
import threading
import time

import pytest

from beacon_env import SECRET, enabled
from httpd import logged_at, wait_for
from test_tomcat import a_sticky_session, proxy, wait_members
from tomcat import APP_PATH, LISTENER_JAR, Tomcat, missing, parse_page

pytestmark = pytest.mark.beacon

# What the Listener reads from conf/beacon.key (0600: BCN00311 warns
# about a key others can read)
KEY_FILE = "file:conf/beacon.key"
# Longer than any test: whatever a test sees within it was announced at
# once, on the event, not by the next periodic announcement
LONG_INTERVAL = "1mi"
# The proxy's own answer for a path no route or ProxyPass takes (httpd's
# error document; Tomcat's says "HTTP Status 404")
PROXY_404 = "<title>404 Not Found</title>"
HOT_JSP = """<%@ page contentType="text/plain" session="false" trimDirectiveWhitespaces="true"
         import="java.lang.management.ManagementFactory,javax.management.ObjectName" %>
hot.jsp on <%= ManagementFactory.getPlatformMBeanServer().getAttribute(
                   new ObjectName("Catalina:type=Engine"), "jvmRoute") %>
"""


@pytest.fixture
def tomcat_factory(httpd_factory, workdir):
    """tomcat_factory(route, listener attributes, quiet=True, key=SECRET,
    auto_deploy=False) -> a Tomcat (not started) whose Listener reads key
    from conf/beacon.key. At teardown every one is stopped by its pid
    while the proxy is still up (this fixture uses httpd_factory, so pytest
    tears it down first: the Listener's leaving finds its receiver), and
    the test fails if one with quiet=True logged SEVERE or WARNING."""
    why = missing() or (None if LISTENER_JAR.is_file() else f"{LISTENER_JAR} is not built")
    if why:
        if os.environ.get("BEACON_SKIP_TOMCAT") == "1":
            pytest.skip(why)
        pytest.fail(f"{why}; scripts/ensure-deps installs Tomcat and the JDK, make all "
                    "builds the jar (BEACON_SKIP_TOMCAT=1 skips these tests instead)",
                    pytrace=False)
    made = []

    def make(route, listener, quiet=True, key=SECRET, auto_deploy=False):
        t = Tomcat(route, workdir, listener=listener, auto_deploy=auto_deploy)
        t.quiet = quiet
        conf = t.base / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "beacon.key").write_text(key + "\n")
        (conf / "beacon.key").chmod(0o600)
        made.append(t)
        return t

    yield make
    for t in made:
        t.stop()
    problems = [f"{t.log_path}: {line}" for t in made if t.quiet for line in t.problems()]
    assert not problems, "\n".join(problems)


def listener(udp, **attrs):
    """The Listener's attributes: this proxy, the key file, and attrs."""
    return {"proxies": f"127.0.0.1:{udp}", "secret": KEY_FILE, **attrs}


def start_all(tomcats):
    for t in tomcats:
        t.start()
        print(f"tomcat {t.route} answered {t.startup_seconds:.2f} s after its JVM started")


def proxy_notes(h):
    """What the receiver did (its info lines and worse), for a failure."""
    return "\n".join(l for l in h.error_log().splitlines()
                     if re.search(r"\[proxy_beacon:(info|notice|warn|error)\]", l)
                     and "BCN00210" not in l)


class Loop(threading.Thread):
    """GETs path through the proxy over and over, each on a connection of
    its own, until stopped: results are (time.monotonic(), status, body)."""

    def __init__(self, h, path):
        super().__init__(daemon=True)
        self.h, self.path = h, path
        self.results = []
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.is_set():
            try:
                status, _, body = self.h.request("GET", self.path)
            except OSError as e:
                status, body = None, repr(e)
            self.results.append((time.monotonic(), status, body))

    def stop(self):
        self.stopped.set()
        self.join(15)

    def count(self):
        return len(self.results)


def test_two_tomcats_join_with_their_jvm_route_and_a_session_sticks(
        httpd_factory, tomcat_factory):
    """The Listener alone, no beaconctl: each Tomcat joins balancer://app
    as its connector's url with route= its jvmRoute, claiming /app, and a
    session stays on the instance that made it."""
    h, udp = proxy(httpd_factory)
    tomcats = [tomcat_factory(r, listener(udp, interval="1")) for r in ("t1", "t2")]
    start_all(tomcats)
    wait_members(h, {t.url: (t.route, False) for t in tomcats})
    first, cookie = a_sticky_session(h)
    assert first in ("t1", "t2") and cookie.endswith(f".{first}")
    for t in tomcats:
        start_line = [l for l in t.log_text().splitlines() if "BCN00300" in l]
        assert len(start_line) == 1 and t.url in start_line[0], start_line
    # every announcement of the last second or more was taken: strictly
    # rising ts, a valid mac, allowed contexts
    assert "dropped datagram" not in h.error_log(), proxy_notes(h)


def test_a_webapp_moved_into_webapps_is_routed_and_moved_out_is_not(
        httpd_factory, tomcat_factory):
    """Hot deploy: the Listener announces the new context at once (its
    interval is a minute). Undeploy: it withdraws the context before
    Tomcat stops serving it. A client hitting /hot/hot.jsp (compiled, so
    served until the context stops, with its directory gone) sees 200s,
    then the proxy's own 404: no 5xx, and no 404 of a Tomcat that no
    longer has /hot."""
    h, udp = proxy(httpd_factory, contexts="/app,/hot")
    t = tomcat_factory("t1", listener(udp, interval=LONG_INTERVAL), auto_deploy=True)
    start_all([t])
    wait_members(h, {t.url: ("t1", False)})
    status, _, body = h.request("GET", "/hot/hot.txt")
    assert status == 404 and PROXY_404 in body, (status, body[:300])

    deployed = t.deploy("hot", {"hot.txt": "hot on t1\n", "hot.jsp": HOT_JSP})

    def routed():
        status, _, body = h.request("GET", "/hot/hot.txt")
        return status == 200 and body == "hot on t1\n" and time.monotonic()
    took = wait_for(routed, 10, "/hot routed through the proxy") - deployed
    print(f"/hot routed {took:.3f} s after it was moved into webapps/")
    assert took <= 2, f"/hot routed only {took:.3f} s after the deploy\n{proxy_notes(h)}"
    assert "BCN00301: context /hot started" in t.log_text(), t.log_tail()

    status, _, body = h.request("GET", "/hot/hot.jsp")  # compiled now
    assert (status, body.strip()) == (200, "hot.jsp on t1"), (status, body[:300])
    loop = Loop(h, "/hot/hot.jsp")
    loop.start()
    try:
        wait_for(lambda: loop.count() >= 5, 10, "the client loop's first requests")
        removed = t.undeploy("hot")
        mark = loop.count()

        def proxy_404():
            for when, status, body in loop.results[mark:]:
                if status == 404 and PROXY_404 in body:
                    return when
            return None
        gone = wait_for(proxy_404, 10, "the proxy's own 404 for /hot") - removed
        # and it stays so: the next requests, once Tomcat has stopped the
        # context too
        wait_for(lambda: "BCN00302: context /hot stopping" in t.log_text(), 10,
                 "BCN00302 in Tomcat's log")
        wait_for(lambda: t.get("/hot/hot.jsp")[0] == 404, 10, "Tomcat itself without /hot")
        settled = loop.count()
        wait_for(lambda: loop.count() >= settled + 10, 10, "ten more requests")
    finally:
        loop.stop()
    print(f"the proxy answered 404 for /hot {gone:.3f} s after it was moved out; "
          f"{loop.count()} requests in the loop")
    seen = [(round(w - removed, 3), s, "proxy" if PROXY_404 in b else b[:200])
            for w, s, b in loop.results]
    failed = [r for r in seen if r[1] is None or r[1] >= 500]
    assert not failed, f"requests failed during the undeploy: {failed[:5]}\n{proxy_notes(h)}"
    stray = [r for r in seen if r[1] != 200 and r[2] != "proxy"]
    assert not stray, f"requests reached Tomcat without /hot: {stray[:5]}\n{proxy_notes(h)}"
    assert gone <= 2, f"/hot still routed {gone:.3f} s after the undeploy\n{proxy_notes(h)}"
    assert {(s, what) for _, s, what in seen[settled:]} == {(404, "proxy")}, seen[settled:]
    # /app stays routed
    status, _, body = h.request("GET", APP_PATH)
    assert status == 200 and parse_page(body)["route"] == "t1", (status, body[:300])


class Watch(threading.Thread):
    """Polls, in turn, balancer-manager for the member `url` and a TCP
    connect() to its port, and records the first time.monotonic() at which
    the member was draining (Drn), disabled (Dis: leaving) or gone, and at
    which connect() failed."""

    def __init__(self, h, url, port):
        super().__init__(daemon=True)
        self.h, self.url, self.port = h, url, port
        self.out = self.drn = self.dis = self.closed = self.error = None
        self.stopped = threading.Event()

    def run(self):
        try:
            self._watch()
        except Exception as e:  # the test reports it
            self.error = e

    def _watch(self):
        while not self.stopped.is_set() and self.closed is None:
            members = {w["name"]: w for w in self.h.balancer_members("app")}
            now = time.monotonic()
            w = members.get(self.url)
            if self.drn is None and w and "Drn" in w["flags"]:
                self.drn = now
            if self.dis is None and w and "Dis" in w["flags"]:
                self.dis = now
            if self.out is None and (w is None or not enabled(w) or "Drn" in w["flags"]):
                self.out = now
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            except OSError:
                self.closed = time.monotonic()
            self.stopped.wait(0.01)

    def stop(self):
        self.stopped.set()
        self.join(15)


def test_a_tomcat_stopped_under_load_fails_no_request_and_leaves_before_its_port_closes(
        httpd_factory, tomcat_factory):
    """SIGTERM runs Tomcat's shutdown hook: the Listener says draining,
    then leaving (with repeats) once its busy threads are 0, all before
    Tomcat pauses and closes its connector. Two client loops through the
    proxy see only 200s, and the proxy had t1 out of rotation before its
    port refused a connection."""
    h, udp = proxy(httpd_factory)
    t1, t2 = tomcats = [tomcat_factory(r, listener(udp, interval=LONG_INTERVAL))
                        for r in ("t1", "t2")]
    start_all(tomcats)
    wait_members(h, {t.url: (t.route, False) for t in tomcats})

    loops = [Loop(h, APP_PATH) for _ in range(2)]
    watch = Watch(h, t1.url, t1.port)
    for loop in loops:
        loop.start()
    try:
        def both_answered():
            routes = {parse_page(b).get("route") for loop in loops
                      for _, s, b in loop.results if s == 200}
            return routes >= {"t1", "t2"}
        wait_for(both_answered, 10, "both Tomcats answering the client loops")
        watch.start()
        stopped, stopped_wall = time.monotonic(), time.time()
        t1.proc.terminate()  # SIGTERM to the JVM's pid
        t1.proc.wait(30)
        exited = time.monotonic()
        watch.join(10)
        count = sum(loop.count() for loop in loops)
        wait_for(lambda: sum(loop.count() for loop in loops) >= count + 20, 10,
                 "20 more requests after t1 exited")
    finally:
        watch.stop()
        for loop in loops:
            loop.stop()

    def since(t):
        return None if t is None else round(t - stopped, 3)
    timeline = (f"after SIGTERM: draining seen {since(watch.drn)} s, leaving (Dis) seen "
                f"{since(watch.dis)} s, connect() refused {since(watch.closed)} s, "
                f"JVM exited {since(exited)} s")
    said = [f"{logged_at(m) - stopped_wall:.3f} s {m.group(1)}" for m in re.finditer(
        r"^.*(backend draining|backend leaving|disabled backend) " + re.escape(t1.url) + ".*$",
        h.error_log(), re.M)]
    timeline += f"; the proxy's log: {', '.join(said)}"
    print(timeline)
    results = [r for loop in loops for r in loop.results]
    failed = [(round(w - stopped, 3), s, b[:200]) for w, s, b in results if s != 200]
    assert not failed, f"{len(failed)} of {len(results)} requests failed: {failed[:5]}\n" \
        f"{timeline}\n{proxy_notes(h)}"
    assert watch.error is None and watch.closed is not None, f"{watch.error}: {timeline}"
    assert watch.out is not None and watch.out < watch.closed, \
        f"t1 was still in rotation when its port closed: {timeline}\n{proxy_notes(h)}"
    # in Tomcat's own words: left before it paused its connector
    log = t1.log_text()
    order = [m.group(0) for m in re.finditer(
        r"BCN00303|BCN00304|Pausing ProtocolHandler", log)]
    assert order[:3] == ["BCN00303", "BCN00304", "Pausing ProtocolHandler"], order
    assert t2.running()


def secrets_of(secret):
    """The forms a secret could leak in: as written, and its 16-byte key
    (docs/wire-format.md) in hex of either case."""
    if secret.startswith("hex:"):
        key = bytes.fromhex(secret[4:])
    else:
        key = hashlib.sha1(secret.encode()).digest()[:16]
    return [secret, secret.split(":", 1)[-1], key.hex(), key.hex().upper()]


@pytest.mark.parametrize("wrong, where", [
    ("hex:ffeeddccbbaa99887766554433221100", "attribute"),
    ("a-passphrase-the-proxy-does-not-know", "file"),
])
def test_a_wrong_secret_is_a_mac_mismatch_and_tomcat_logs_nothing_of_it(
        httpd_factory, tomcat_factory, wrong, where):
    """The proxy drops the Tomcat's announcements (`mac mismatch`) and adds
    no member; Tomcat's log holds neither the secret nor its key, whether
    the secret is in server.xml or in the key file."""
    h, udp = proxy(httpd_factory)
    attrs = listener(udp, secret=wrong) if where == "attribute" else listener(udp)
    t = tomcat_factory("t1", attrs, key=wrong)
    start_all([t])
    h.wait_log(r"dropped datagram from 127\.0\.0\.1:\d+: mac mismatch")
    assert [w for w in h.balancer_members("app") if w["name"] == t.url] == []
    t.stop()
    log = t.log_text()
    assert "BCN00300" in log, t.log_tail()
    for form in secrets_of(wrong) + secrets_of(SECRET):
        assert form not in log, f"{form!r} in {t.log_path}"


@pytest.mark.parametrize("attrs, named", [
    ({"interval": "abc"}, r'interval="abc"'),
    ({"secret": None}, r"\bsecret\b"),
])
def test_a_bad_attribute_fails_tomcats_start_with_one_line_naming_it(
        tomcat_factory, attrs, named):
    """One SEVERE line, BCN00310, names the attribute; Tomcat's start
    fails: no connector ever opens, and the JVM exits by itself."""
    given = {k: v for k, v in listener(9, **attrs).items() if v is not None}
    t = tomcat_factory("t1", given, quiet=False)
    t.launch()
    opened = []

    def exited():
        try:
            socket.create_connection(("127.0.0.1", t.port), timeout=1).close()
            opened.append(time.monotonic())
        except OSError:
            pass
        return t.proc.poll() is not None
    try:
        wait_for(lambda: "BCN00310" in t.log_text() or t.proc.poll() is not None, 30,
                 "BCN00310 in Tomcat's log", interval=0.05)
        wait_for(exited, 20, "the JVM to exit by itself", interval=0.02)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{t.log_tail()}") from None
    lines = [l for l in t.log_text().splitlines() if "BCN00310" in l]
    assert len(lines) == 1, "\n".join(lines) or t.log_tail()
    assert re.search(r" SEVERE .*BCN00310: BeaconListener\b.*" + named, lines[0]), lines[0]
    print(f"{lines[0]}\nJVM exit status {t.proc.returncode}")
    assert not opened, f"port {t.port} accepted a connection:\n{t.log_tail()}"
    assert "Starting ProtocolHandler" not in t.log_text(), t.log_tail()
