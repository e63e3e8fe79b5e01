# Licensed under the Apache License, Version 2.0; see LICENSE.
"""ProxyBeaconMemberParams: the BalancerMember parameters the proxy gives
the members beacon adds, checked by apache2 -t, on every member before its
first request; and health checks, which beacon never overrides."""

import time

import pytest

from beacon_env import Announcer, Heartbeat, receiver_config, start_receiver, wait_member
from httpd import free_port, wait_for

pytestmark = pytest.mark.beacon


def proxy(httpd_factory, params, extra_modules=(), timeout="30", extra=""):
    udp = free_port()
    h = httpd_factory(tail_config=receiver_config(
        udp, timeout=timeout,
        extra=extra + "".join(f"ProxyBeaconMemberParams {p}\n" for p in params)))
    if extra_modules:
        base = h.modules_config
        h.modules_config = lambda: base() + "".join(
            f"LoadModule {m}_module /usr/lib/apache2/modules/mod_{m}.so\n"
            for m in extra_modules)
    return h, udp


def test_every_member_gets_the_params(httpd_factory, backend_factory):
    h, udp = proxy(httpd_factory, ["retry=7 ttl=9", "max=5 timeout=1"])
    start_receiver(h)
    ann = Announcer(udp)
    fast, slow = backend_factory("fast"), backend_factory("slow")
    for b in (fast, slow):
        ann.announce(b.url)
        wait_member(h, b.url)
        w = next(w for w in h.balancer_members() if w["name"] == b.url)
        assert (w["retry"], w["ttl"], w["max"], w["timeout"]) == (7, 9, 5, 1), w
    # timeout=1: a backend slower than a second is a gateway error after
    # about a second, not after httpd's default 60
    started = time.monotonic()
    status, _ = h.get("/slow/3000", timeout=10)
    took = time.monotonic() - started
    assert status in (502, 503, 504) and took < 2.5, (status, took)
    h.expect_errors("AH01102", "AH00898", "AH01114", "AH00957", "AH00959")

    # they survive what membership survives: a restart
    mark = h.log_size()
    h.graceful()
    h.wait_log(r"BCN00011: restored 2 member\(s\)", since=mark)
    for b in (fast, slow):
        w = next(w for w in h.balancer_members() if w["name"] == b.url)
        assert (w["retry"], w["ttl"], w["max"], w["timeout"]) == (7, 9, 5, 1), w


@pytest.mark.parametrize("param,fragment", [
    ("timeout=0", "timeout must be a whole number of seconds"),
    ("retry=-1", "retry must be a whole number of seconds"),
    ("max=lots", "max must be a whole number"),
    ("acquire=0", "acquire must be an interval from 1ms to 1h"),
    ("connectiontimeout=x", "connectiontimeout must be an interval"),
    ("keepalive=maybe", "keepalive must be on or off"),
    ("loadfactor=101", "loadfactor must be a number from 1 to 100"),
    ("lbset=100", "lbset must be a whole number, 0 to 99"),
    ("status=+D", "status takes the flags S, N, H, R and I"),
    ("route=r1", "route is each member's own"),
    ("nosuch=1", "unknown key nosuch"),
    ("timeout", "'timeout' is not key=value"),
    ("hcmethod=GET", "hcmethod needs mod_proxy_hcheck"),
])
def test_a_bad_param_is_a_configuration_error(httpd_factory, param, fragment):
    h, _ = proxy(httpd_factory, [param])
    rc, out = h.check_config()
    assert rc != 0 and fragment in out, out
    assert out.count("ProxyBeaconMemberParams") >= 1


# Every duration has an upper bound, named in the one line apache2 -t
# prints: past it a value is a typo, and huge ones overflowed the recycle
# gate's sums (a slot renamed 6 s after it left rotation).
@pytest.mark.parametrize("param,bound", [
    ("acquire=3600001", "from 1ms to 1h"),
    ("acquire=9223372036854775807", "from 1ms to 1h"),
    ("acquire=2562047788015h", "from 1ms to 1h"),  # wraps a signed 64-bit sum
    ("connectiontimeout=3601", "from 1ms to 1h"),
    ("connectiontimeout=61mi", "from 1ms to 1h"),
    ("connectiontimeout=9223372036854s", "from 1ms to 1h"),
    ("ping=3601", "from 1ms to 1h"),
    ("ping=3600001ms", "from 1ms to 1h"),
    ("timeout=86401", "1 to 86400"),
    ("retry=86401", "0 to 86400"),
    ("ttl=86401", "1 to 86400"),
    ("flushwait=1001", "0 to 1000"),
])
def test_a_duration_past_its_bound_is_refused(httpd_factory, param, bound):
    h, _ = proxy(httpd_factory, [param])
    rc, out = h.check_config()
    key = param.split("=")[0]
    lines = [line for line in out.splitlines() if "ProxyBeaconMemberParams" in line]
    assert rc != 0 and len(lines) == 1, out
    assert f"ProxyBeaconMemberParams: {key} " in lines[0] and bound in lines[0], out


@pytest.mark.parametrize("param", ["acquire=3600000", "acquire=1h",
                                   "connectiontimeout=3600", "ping=60mi"])
def test_a_duration_at_its_bound_is_accepted(httpd_factory, param):
    h, _ = proxy(httpd_factory, [param])
    rc, out = h.check_config()
    assert rc == 0, out


def test_a_bad_health_check_param_is_a_configuration_error(httpd_factory):
    h, _ = proxy(httpd_factory, ["hcmethod=NOSUCH"], extra_modules=["proxy_hcheck"])
    rc, out = h.check_config()
    assert rc != 0 and "ProxyBeaconMemberParams: hcmethod=NOSUCH" in out, out


def test_a_failing_health_check_keeps_an_announcing_member_out(httpd_factory,
                                                               backend_factory):
    """The lease says the backend lives and wants traffic; the health check
    says it answers correctly. Both must hold: beacon never clears the
    health check's flag."""
    h, udp = proxy(httpd_factory, ["hcmethod=GET hcuri=/health hcinterval=1"],
                   extra_modules=["proxy_hcheck"])
    start_receiver(h)
    ann = Announcer(udp)
    ill, well = backend_factory("ill"), backend_factory("well")
    with Heartbeat(ann, ill.url, period=0.3), Heartbeat(ann, well.url, period=0.3):
        for b in (ill, well):
            wait_member(h, b.url)
        ill.set_healthy(False)

        def failed():
            w = next(w for w in h.balancer_members() if w["name"] == ill.url)
            return "HcFl" in w["flags"]
        wait_for(failed, 15, "the health check to fail")
        answers = {h.get("/")[1] for _ in range(10)}
        assert answers == {"well"}, answers
        ill.set_healthy(True)
        wait_for(lambda: not failed(), 15, "the health check to pass again")
        wait_for(lambda: h.get("/")[1] == "ill", 10, "ill back in rotation")
