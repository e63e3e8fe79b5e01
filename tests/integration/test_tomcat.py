# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A real Tomcat behind a routed context (issue 24): two instances of
Debian's Tomcat 10 (tomcat.py), jvmRoute t1 and t2, each announced by
`beaconctl send --ctx /app --route tN` to a receiver whose balancer
`app` allows contexts=/app and sticks on JSESSIONID|jsessionid. There is
no ProxyPass for /app: the request reaches Tomcat because a member claims
the context, with its path unchanged. Tomcat suffixes its session ids with
.<jvmRoute>, which is how stock mod_proxy_balancer keeps a session on its
instance; a draining instance keeps its sessions and takes no new one.

Tomcat comes from scripts/ensure-deps (make check installs it). Without
it the tests fail, naming the packages, unless BEACON_SKIP_TOMCAT=1 says
this machine is meant to go without: then they are skipped."""

import os
import re
import subprocess

import pytest

from beacon_env import SECRET, enabled, start_receiver
from httpd import free_port, wait_for
from test_sender import BEACONCTL
from tomcat import APP_PATH, Tomcat, missing, parse_page

pytestmark = pytest.mark.beacon

STICKY = "JSESSIONID|jsessionid"
ROUTES = ("t1", "t2")
REQUESTS = 20


@pytest.fixture
def tomcats(workdir):
    """Tomcats t1 and t2, started (each in its own CATALINA_BASE); at
    teardown stopped by their pids, and failed if one logged SEVERE or
    WARNING."""
    why = missing() or (None if BEACONCTL.exists() else f"{BEACONCTL} is not built")
    if why:
        if os.environ.get("BEACON_SKIP_TOMCAT") == "1":
            pytest.skip(why)
        pytest.fail(f"{why}; scripts/ensure-deps installs Tomcat "
                    "(BEACON_SKIP_TOMCAT=1 skips these tests instead)", pytrace=False)
    started = {}
    try:
        for route in ROUTES:
            t = started[route] = Tomcat(route, workdir)  # stopped even if start fails
            t.start()
            print(f"tomcat {route} answered {t.startup_seconds:.2f} s after its JVM started")
        yield started
    finally:
        for t in started.values():
            t.stop()
    problems = [f"{t.log_path}: {line}" for t in started.values() for line in t.problems()]
    assert not problems, "\n".join(problems)


def proxy(httpd_factory, contexts="/app"):
    """A receiver whose balancer `app` may claim contexts (/app), sticky on
    Tomcat's session, with no ProxyPass at all. Returns (started httpd,
    udp port)."""
    udp = free_port()
    h = httpd_factory()
    h.proxy_config = (f"<Proxy balancer://app>\n    ProxySet growth=4 stickysession={STICKY}\n"
                      "</Proxy>\n")
    h.proxypass_config = ""
    h.tail_config = (f"ProxyBeaconListen 127.0.0.1:{udp}\nProxyBeaconSecret {SECRET}\n"
                     # the lease outlives the test: beaconctl announces --once
                     "ProxyBeaconTimeout 300\n"
                     f"ProxyBeaconBalancer app contexts={contexts}\n")
    start_receiver(h)
    return h, udp


def announce(workdir, udp, tomcat, *options):
    """One `beaconctl send --once` for tomcat: its url, /app, its jvmRoute."""
    secret = workdir / "secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    r = subprocess.run([str(BEACONCTL), "send", "--once", "--to", f"127.0.0.1:{udp}",
                        "--url", tomcat.url, "--ctx", "/app", "--route", tomcat.route,
                        "--secret-file", str(secret), *options],
                       capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr


def wait_members(h, want):
    """Until balancer://app's members are want: {url: (route, drain)}."""
    def members():
        have = {w["name"]: (w["route"], "Drn" in w["flags"])
                for w in h.balancer_members("app") if enabled(w)}
        return have == want and have
    return wait_for(members, 10, f"balancer://app members {want}")


def visit(h, cookie=None, in_url=False):
    """GET the application through the proxy, with the session cookie if
    given (in_url: as ;jsessionid= in the path instead): (page as a dict,
    the JSESSIONID Tomcat set, or None)."""
    path, headers = APP_PATH, {}
    if cookie and in_url:
        path += f";jsessionid={cookie}"
    elif cookie:
        headers["Cookie"] = f"JSESSIONID={cookie}"
    status, got, body = h.request("GET", path, headers=headers)
    assert status == 200, f"{APP_PATH} answered {status}: {body[:500]}"
    m = re.match(r"JSESSIONID=([^;]+)", got.get("Set-Cookie", ""))
    return parse_page(body), m and m.group(1)


def a_sticky_session(h):
    """A new session, then REQUESTS with its cookie and a few with it in
    the path, all on its instance: (that instance's route, the id)."""
    page, cookie = visit(h)
    first = page["route"]
    assert cookie and page["session"] == cookie and cookie.endswith(f".{first}"), page
    assert page["new"] == "true"
    for _ in range(REQUESTS):
        page, again = visit(h, cookie)
        assert (page["route"], page["session"], page["new"], again) == \
            (first, cookie, "false", None), page
    # the other half of STICKY: the session id in the path
    for _ in range(REQUESTS // 4):
        page, again = visit(h, cookie, in_url=True)
        assert (page["route"], page["session"], again) == (first, cookie, None), page
    return first, cookie


# tomcats before httpd_factory: the proxy stops first, while its members
# are still up, as the other tests' backends do
def test_a_tomcat_session_sticks_to_its_instance_through_a_routed_context(
        tomcats, httpd_factory, workdir):
    """No ProxyPass for /app: the claim routes it, and Tomcat, whose
    context is /app, answers only a path that arrives unchanged."""
    h, udp = proxy(httpd_factory)
    for t in tomcats.values():
        announce(workdir, udp, t)
    wait_members(h, {t.url: (t.route, False) for t in tomcats.values()})
    first, cookie = a_sticky_session(h)

    # the session's instance drains: new sessions go to the other one ...
    other = next(r for r in ROUTES if r != first)
    announce(workdir, udp, tomcats[first], "--state", "draining")
    wait_members(h, {t.url: (t.route, t.route == first) for t in tomcats.values()})
    for _ in range(REQUESTS // 2):
        page, new_cookie = visit(h)
        assert page["route"] == other and new_cookie.endswith(f".{other}"), page
    # ... while the existing session still reaches its own
    for _ in range(REQUESTS // 2):
        page, _ = visit(h, cookie)
        assert (page["route"], page["session"], page["new"]) == (first, cookie, "false"), page

