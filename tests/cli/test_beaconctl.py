#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Behaviour of the beaconctl command-line tool.

Run by ctest (see CMakeLists.txt, "# beaconctl"), one entry per file:

    BEACONCTL=build/beaconctl /usr/bin/python3 -m pytest -q tests/cli/test_beaconctl.py

The helpers are beaconctl.py's, the fixtures conftest.py's.
"""

import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

import beacon_wire as bw
from beaconctl import (HEX_SECRET, PASSPHRASE, TIMEOUT, VECTOR_HEARTBEAT,
                       VECTOR_PASSPHRASE, VECTOR_ROUTE, VECTOR_URL,
                       assert_one_line_error, clean_env, now_usec, run,
                       sign_body, udp_send, vectors)


# ---------------------------------------------------------------------------
# sign prints exactly the wire-format.md vectors.

def sign(*args, secret=None):
    r = run(["sign"] + list(args), secret=secret)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout.endswith("\n")
    return r.stdout[:-1]


def heard(listener, datagram):
    """Sends datagram to listener; the line it prints for it."""
    udp_send(listener.port, datagram)
    return listener.expect(r"^(accepted|dropped) ")


# The fields of the url vector (docs/wire-format.md, "Test vectors"), as
# sign's options.
URL_VECTOR_FIELDS = ("--url", "http://10.0.0.5:8080", "--host", "web-1", "--pid",
                     "4242", "--seq", "17", "--ts", "1796000000000000")


def test_hex_key_from_secret_file_gives_the_url_vector(secret_file):
    path = secret_file(HEX_SECRET + "\n")
    assert sign(*URL_VECTOR_FIELDS, "--secret-file", path) == VECTOR_URL


def test_heartbeat_without_url_gives_the_heartbeat_vector(secret_file):
    path = secret_file(HEX_SECRET)  # no trailing newline
    assert sign(
        "--host", "web-1", "--pid", "4242", "--seq", "18",
        "--ts", "1796000000000001", "--secret-file", path) == VECTOR_HEARTBEAT


def test_passphrase_key_from_environment_gives_the_passphrase_vector():
    assert sign(*URL_VECTOR_FIELDS, secret=PASSPHRASE) == VECTOR_PASSPHRASE


def test_passphrase_from_file_with_crlf_line_end(secret_file):
    path = secret_file(PASSPHRASE + "\r\nsecond line ignored\n")
    assert sign(*URL_VECTOR_FIELDS, "--secret-file", path) == VECTOR_PASSPHRASE


def test_secret_file_wins_over_environment(secret_file):
    path = secret_file(HEX_SECRET + "\n")
    assert sign(*URL_VECTOR_FIELDS, "--secret-file", path, secret=PASSPHRASE) == VECTOR_URL


def test_url_is_canonicalized_and_state_written_before_mac():
    out = sign("--url", "HTTP://App.Example.COM:80/", "--ts", "5",
               "--state", "leaving", secret=HEX_SECRET)
    assert re.search(r"^BEACON url=http://app\.example\.com ts=5 "
                     r"state=leaving mac=[0-9a-f]{16}$", out)


def test_service_is_written_after_ts_and_before_state():
    out = sign("--url", "http://10.0.0.5:8080", "--ts", "5",
               "--state", "leaving", "--service", "Shop.EU-1_blue",
               secret=HEX_SECRET)
    assert re.search(r"^BEACON url=http://10\.0\.0\.5:8080 ts=5 "
                     r"svc=Shop\.EU-1_blue state=leaving "
                     r"mac=[0-9a-f]{16}$", out)


@pytest.mark.parametrize("name", ["", "my shop", "shop!", "s" * 64,
                                  "caf\u00e9"])
def test_an_invalid_service_is_a_usage_error_naming_the_rule(name):
    r = run(["sign", "--ts", "5", "--service", name], secret=HEX_SECRET)
    assert_one_line_error(r, must_contain=["--service", "1 to 63",
                                           "A-Z a-z 0-9 . _ -"])


def test_a_service_of_63_characters_is_accepted():
    # the bound next to the refused "s" * 64 above
    r = run(["sign", "--ts", "5", "--service", "s" * 63], secret=HEX_SECRET)
    assert r.returncode == 0, r.stderr


def test_route_and_lbfactor_give_the_v1_1_vector():
    assert sign(
        "--url", "http://10.0.0.5:8080", "--host", "web-1", "--pid",
        "4242", "--seq", "19", "--ts", "1796000000000002",
        "--route", "web1", "--lbfactor", "2.5", secret=HEX_SECRET) == VECTOR_ROUTE


# The option of sign that writes each field of the wire format.
OPTION_OF = {"url": "--url", "host": "--host", "pid": "--pid",
             "seq": "--seq", "ts": "--ts", "svc": "--service",
             "ctx": "--ctx", "route": "--route", "lbfactor": "--lbfactor",
             "state": "--state"}


# v1, v1.1 and v1.2 rows alike: a row added to the file is checked too
@pytest.mark.parametrize("version,secret,datagram", vectors())
def test_every_vector_is_signed_again_from_its_fields(version, secret,
                                                      datagram):
    fields = [t.split("=", 1) for t in datagram.split(" ")[1:-1]]
    args = [a for k, v in fields for a in (OPTION_OF[k], v)]
    assert sign(*args, secret=secret) == datagram


def test_route_and_lbfactor_are_written_between_svc_and_state():
    out = sign("--ts", "5", "--state", "leaving", "--lbfactor", "100",
               "--route", "node-2.eu_1", "--service", "shop",
               secret=HEX_SECRET)
    assert re.search(r"^BEACON ts=5 svc=shop route=node-2\.eu_1 "
                     r"lbfactor=100 state=leaving mac=[0-9a-f]{16}$", out)


@pytest.mark.parametrize("option,value,words", [
    *[("--route", v, ["1 to 63", "A-Z a-z 0-9 . _ -", "route="])
      for v in ("", "web/1", "web 1", "r" * 64, "caf\u00e9")],
    *[("--lbfactor", v, ["1 to 100", "two decimals", "lbfactor="])
      for v in ("", "0", "0.99", "100.01", "101", "2.555", "-1",
                "+2", "1e2", "2.", ".5", "2,5", " 2")]])
def test_an_invalid_route_or_lbfactor_is_a_usage_error_naming_the_rule(
        option, value, words):
    r = run(["sign", "--ts", "5", option, value], secret=HEX_SECRET)
    assert_one_line_error(r, must_contain=[f"{option} '", *words])


# the bounds next to the refused values above
@pytest.mark.parametrize("option,value", [
    ("--route", "r" * 63), ("--lbfactor", "1"), ("--lbfactor", "100"),
    ("--lbfactor", "99.99"), ("--lbfactor", "007.5")])
def test_a_valid_route_or_lbfactor_is_written_as_given(option, value):
    out = sign("--ts", "5", option, value, secret=HEX_SECRET)
    assert f" {option[2:]}={value} " in out


@pytest.mark.parametrize("option,value,words", [
    *[("--ctx", bad, ["--ctx", "1 to 16 paths", "ctx= rule"])
      for bad in ("shop", "/shop/", "/a,,/b", "/a/../b", "/a%20b",
                  ",".join(f"/p{i}" for i in range(17)))],
    *[("--state", bad, ["--state", "leaving, draining or standby"])
      for bad in ("paused", "Leaving", "draining ")]])
def test_an_invalid_ctx_or_state_is_a_usage_error_naming_the_rule(
        option, value, words):
    assert_one_line_error(
        run(["sign", "--ts", "5", option, value], secret=HEX_SECRET),
        must_contain=words)


def test_every_state_sign_knows_is_written():
    for good in ("leaving", "draining", "standby"):
        assert f" state={good} " in sign("--ts", "5", "--state", good,
                                         secret=HEX_SECRET)


def test_ts_now_is_this_clock():
    before = now_usec()
    out = sign("--ts", "now", secret=HEX_SECRET)
    after = now_usec()
    ts = int(re.match(r"^BEACON ts=(\d+) mac=[0-9a-f]{16}$", out).group(1))
    assert before <= ts
    assert ts <= after


# ---------------------------------------------------------------------------
# keygen

def keygen():
    r = run(["keygen"])
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert re.search(r"\A" + r"hex:[0-9a-f]{32}" + r"\n\Z", r.stdout)
    return r.stdout[:-1]


def test_two_keys_differ_and_each_parses():
    a, b = keygen(), keygen()
    assert a != b
    for key in (a, b):
        r = run(["sign", "--ts", "1"], secret=key)
        assert r.returncode == 0, r.stderr
        assert re.search(r"^BEACON ts=1 mac=[0-9a-f]{16}\n$", r.stdout)


def test_arguments_are_refused():
    assert_one_line_error(run(["keygen", "extra"]))


# ---------------------------------------------------------------------------
# listen reports what a receiver decides, one flushed line each.

@pytest.fixture
def listener(listen):
    return listen()


def test_signed_datagram_is_accepted_and_forged_one_dropped(listener):
    ts = now_usec()
    good = run(["sign", "--url", "HTTP://127.0.0.1:8080/", "--host",
                "web-1", "--pid", "42", "--seq", "0", "--ts", str(ts)],
               secret=HEX_SECRET).stdout.rstrip("\n")
    line = heard(listener, good)
    assert re.search(rf"^accepted url=http://127\.0\.0\.1:8080 "
                     rf"host=web-1 pid=42 seq=0 ts={ts} "
                     rf"from 127\.0\.0\.1:\d+ -> add$", line)

    # one hex digit of the mac changed
    last = good[-1]
    forged = good[:-1] + ("0" if last != "0" else "1")
    line = heard(listener, forged)
    assert re.search(r"^dropped mac mismatch from 127\.0\.0\.1:\d+", line)

    # the same datagram again: the replay check has seen its ts
    line = heard(listener, good)
    assert re.search(r"^dropped replayed/reordered ts from ", line)


def test_accepted_lines_show_the_v1_1_fields_in_wire_order(listener):
    ts = now_usec()
    signed = run(["sign", "--url", "http://127.0.0.1:8085",
                  "--host", "web-1", "--ts", str(ts), "--service", "cart",
                  "--route", "web1", "--lbfactor", "2.5",
                  "--state", "leaving"],
                 secret=HEX_SECRET).stdout.rstrip("\n")
    line = heard(listener, signed)
    assert re.search(rf"^accepted url=http://127\.0\.0\.1:8085 "
                     rf"host=web-1 ts={ts} svc=cart route=web1 "
                     rf"lbfactor=2\.5 state=leaving "
                     rf"from 127\.0\.0\.1:\d+ -> ignore$", line)
    heartbeat = run(["sign", "--ts", "now", "--service", "cart"],
                    secret=HEX_SECRET).stdout.rstrip("\n")
    line = heard(listener, heartbeat)
    assert re.search(r"^accepted heartbeat ts=\d+ svc=cart "
                     r"from 127\.0\.0\.1:\d+$", line)


def test_accepted_lines_show_svc_ctx_and_state_of_v1_2(listener):
    ts = now_usec()
    signed = run(["sign", "--url", "http://127.0.0.1:8087", "--ts", str(ts),
                  "--service", "shop", "--ctx", "/shop,/cart",
                  "--state", "draining"],
                 secret=HEX_SECRET).stdout.rstrip("\n")
    line = heard(listener, signed)
    assert re.search(rf"^accepted url=http://127\.0\.0\.1:8087 "
                     rf"ts={ts} svc=shop ctx=/shop,/cart "
                     rf"state=draining from 127\.0\.0\.1:\d+ -> add$", line)


def test_a_bad_route_or_lbfactor_is_a_bad_field_named_by_its_key(listener):
    # sign refuses them, so the datagrams are signed here
    for key, value in (("route", "web/1"), ("lbfactor", "0.5"),
                       ("ctx", "/shop/"), ("state", "paused")):
        body = (f"BEACON url=http://127.0.0.1:8091 ts={now_usec()} "
                f"{key}={value}")
        line = heard(listener, sign_body(body))
        assert re.search(rf"^dropped bad field {key} from "
                         rf"127\.0\.0\.1:\d+: \"BEACON .* "
                         rf"{key}={re.escape(value)} mac=", line)


def test_a_bad_svc_is_a_bad_field_named_by_its_key(listener):
    # sign refuses a bad service, so the datagram is signed here
    body = f"BEACON url=http://127.0.0.1:8086 ts={now_usec()} svc=shop!"
    line = heard(listener, sign_body(body))
    assert re.search(r"^dropped bad field svc from 127\.0\.0\.1:\d+: "
                     r'"BEACON .* svc=shop! mac=[0-9a-f]{16}"$', line)


def test_peer_bytes_are_escaped(listener):
    line = heard(listener, b"BEACON \x01\xff\"\\ \x1b[2J")
    assert line.startswith("dropped bad frame from 127.0.0.1:"), line
    assert r'"BEACON \x01\xff\x22\x5c \x1b[2J"' in line
    assert line.isprintable(), repr(line)


def test_stale_ts_and_heartbeat(listener):
    stale = run(["sign", "--url", "http://127.0.0.1:8081",
                 "--ts", str(now_usec() - 120 * 1000000)],
                secret=HEX_SECRET).stdout.rstrip("\n")
    line = heard(listener, stale)
    assert re.search(r"^dropped stale ts from 127\.0\.0\.1:\d+: "
                     r"ts=\d+ is 1[12]\d\.\d{3} s behind this clock", line)

    heartbeat = run(["sign", "--host", "hb-1", "--ts", "now"],
                    secret=HEX_SECRET).stdout.rstrip("\n")
    line = heard(listener, heartbeat)
    assert re.search(r"^accepted heartbeat host=hb-1 ts=\d+ "
                     r"from 127\.0\.0\.1:\d+$", line)


# ---------------------------------------------------------------------------
# listen with one --secret-file per secret, as a proxy in a rotation.

OTHER = "hex:ffeeddccbbaa99887766554433221100"
STRANGER = "hex:0f0e0d0c0b0a09080706050403020100"


def signed_with_secret_file(secret_file, secret, url):
    r = run(["sign", "--url", url, "--ts", "now",
             "--secret-file", secret_file(secret + "\n")])
    assert r.returncode == 0, r.stderr
    return r.stdout.rstrip("\n")


def test_any_of_the_secrets_verifies(listen, secret_file):
    listener = listen("--secret-file", secret_file(OTHER),
                      "--secret-file", secret_file(HEX_SECRET), secret=None)
    for secret, port in ((HEX_SECRET, 8091), (OTHER, 8092)):
        udp_send(listener.port, signed_with_secret_file(
            secret_file, secret, f"http://127.0.0.1:{port}"))
        line = listener.expect(r"^(accepted|dropped) ")
        assert re.search(rf"^accepted url=http://127\.0\.0\.1:{port} ", line)
    udp_send(listener.port, signed_with_secret_file(
        secret_file, STRANGER, "http://127.0.0.1:8093"))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped mac mismatch from 127\.0\.0\.1:\d+ "
                     r"\(not signed with any of these secrets\?\)", line)


def test_more_than_four_secret_files_is_a_usage_error(secret_file):
    f = secret_file(HEX_SECRET)
    r = run(["listen", "--bind", "127.0.0.1:0"] + ["--secret-file", f] * 5)
    assert_one_line_error(r, must_contain=["--secret-file", "at most 4"])


# ---------------------------------------------------------------------------
# listen --service decides as a proxy with ProxyBeaconService.

@pytest.fixture
def shop_listener(listen):
    return listen("--service", "shop")


def signed(*args, ts="now"):
    """`sign --ts TS ARGS` under HEX_SECRET."""
    r = run(["sign", "--ts", str(ts)] + list(args), secret=HEX_SECRET)
    assert r.returncode == 0, r.stderr
    return r.stdout.rstrip("\n")


def test_the_banner_names_the_service(shop_listener):
    assert re.search(r"^listening on 127\.0\.0\.1:\d+ "
                     r"\(max skew 30 s, service shop\)$", shop_listener.seen[0])


def test_only_datagrams_for_its_service_are_accepted(shop_listener):
    listener = shop_listener
    port = listener.port
    udp_send(port, signed("--url", "http://127.0.0.1:8087",
                          "--service", "cart"))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped wrong service from 127\.0\.0\.1:\d+: "
                     r"svc=cart \(this receiver is for shop\)$", line)
    udp_send(port, signed("--url", "http://127.0.0.1:8087"))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped wrong service from 127\.0\.0\.1:\d+: "
                     r"no svc \(this receiver is for shop\)$", line)
    udp_send(port, signed("--service", "Shop"))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped wrong service .*: svc=Shop ", line)
    udp_send(port, signed("--url", "http://127.0.0.1:8087",
                          "--service", "shop"))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8087 ts=\d+ "
                     r"svc=shop from 127\.0\.0\.1:\d+ -> add$", line)


def test_a_foreign_datagram_moves_no_replay_mark(shop_listener):
    # a later ts for another service, then the member's own older one
    ts = now_usec()
    port = shop_listener.port
    for service, at in (("shop", ts), ("cart", ts + 2), ("shop", ts + 1)):
        udp_send(port, signed("--url", "http://127.0.0.1:8088",
                              "--service", service, ts=at))
    shop_listener.expect(rf"^accepted .* ts={ts} svc=shop .* -> add$")
    shop_listener.expect(r"^dropped wrong service ")
    shop_listener.expect(rf"^accepted .* ts={ts + 1} svc=shop .* -> renew$")


# ---------------------------------------------------------------------------
# listen --allow decides as a proxy with ProxyBeaconAllow: libbeacon's
# reach rule, "source" being the address each datagram came from. Nothing
# connects to these urls (listen only prints verdicts), so a link-local
# one is safe to announce here.

def allow_listener(listen, *allow):
    args = []
    for entry in allow:
        args += ["--allow", entry]
    return listen(*args)


def verdict(listener, url, source="127.0.0.1"):
    """The line for url, announced from source (a loopback address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((source, 0))
        s.sendto(signed("--url", url).encode(), ("127.0.0.1", listener.port))
    return listener.expect(r"^(accepted|dropped) ")


def assert_accepted(listener, url, canonical, source="127.0.0.1"):
    assert re.search(rf"^accepted url={re.escape(canonical)} .*"
                     rf"from {re.escape(source)}:\d+ -> add$",
                     verdict(listener, url, source))


def assert_refused(listener, url, canonical, why, source="127.0.0.1"):
    assert re.search(rf"^dropped url not allowed from "
                     rf"{re.escape(source)}:\d+: "
                     rf"url={re.escape(canonical)} \({why}\)$",
                     verdict(listener, url, source))


def test_the_defaults_refuse_link_local_only(listen):
    listener = allow_listener(listen)
    assert re.search(r"^listening on 127\.0\.0\.1:\d+ \(max skew 30 s\)$",
                     listener.seen[0])
    assert_refused(listener, "http://169.254.169.254",
                   "http://169.254.169.254", r"a link-local .*")
    assert_refused(listener, "HTTP://169.254.169.254:80/",
                   "http://169.254.169.254", r"a link-local .*")
    assert_accepted(listener, "http://127.0.0.1:8101",
                    "http://127.0.0.1:8101")


def test_an_address_allows_itself_only(listen):
    listener = allow_listener(listen, "127.0.0.2")
    assert re.search(r"^listening on 127\.0\.0\.1:\d+ \(max skew 30 s, allow "
                     r"127\.0\.0\.2\)$", listener.seen[0])
    assert_refused(listener, "http://127.0.0.1:8102",
                   "http://127.0.0.1:8102", "no entry allows it")
    assert_accepted(listener, "http://127.0.0.2:8102",
                    "http://127.0.0.2:8102")


def test_source_is_the_address_the_datagram_came_from(listen):
    listener = allow_listener(listen, "source")
    assert_accepted(listener, "http://127.0.0.1:8103",
                    "http://127.0.0.1:8103")
    assert_refused(listener, "http://127.0.0.2:8103",
                   "http://127.0.0.2:8103", "no entry allows it")
    # the same url from 127.0.0.2 itself is its sender's address
    assert_accepted(listener, "http://127.0.0.2:8103",
                    "http://127.0.0.2:8103", source="127.0.0.2")
    # and "source" never opens link-local
    assert_refused(listener, "http://169.254.169.254",
                   "http://169.254.169.254", r"a link-local .*")


def test_a_suffix_allows_names_under_it_only(listen):
    listener = allow_listener(listen, "*.svc.local")
    assert_accepted(listener, "http://a.svc.local", "http://a.svc.local")
    assert_accepted(listener, "http://B.a.SVC.local:8104",
                    "http://b.a.svc.local:8104")
    assert_refused(listener, "http://svc.local", "http://svc.local",
                   "no entry allows it")
    # a name entry never allows an address, nor an address a name
    assert_refused(listener, "http://127.0.0.1:8104",
                   "http://127.0.0.1:8104", "no entry allows it")


def test_lists_add_up(listen):
    listener = allow_listener(listen, "127.0.0.2,*.svc.local", "10.0.0.0/8",
                              "127.0.0.2")
    assert re.search(r", allow 127\.0\.0\.2 \*\.svc\.local 10\.0\.0\.0/8\)$",
                     listener.seen[0])
    assert_accepted(listener, "http://a.svc.local:8105",
                    "http://a.svc.local:8105")
    assert_accepted(listener, "http://127.0.0.2:8105",
                    "http://127.0.0.2:8105")
    assert_refused(listener, "http://127.0.0.3:8105",
                   "http://127.0.0.3:8105", "no entry allows it")


@pytest.mark.parametrize("allow,entry,problem", [
    ("10.1.0.0/8", "10.1.0.0/8", "bits set past its prefix"),
    ("127.0.0.1,10.1.0.0/8", "10.1.0.0/8", "prefix length"),
    ("127.0.0.1,,a.svc.local", "", "an empty entry"),
    ("a.*.local", "a.*.local", "wildcard"),
    ("[::1]", "[::1]", "without brackets")])
def test_a_bad_entry_is_a_usage_error_naming_it(allow, entry, problem):
    r = run(["listen", "--bind", "127.0.0.1:0", "--allow", allow],
            secret=HEX_SECRET)
    assert_one_line_error(r, must_contain=[f"--allow '{entry}': ", problem])


# ---------------------------------------------------------------------------
# BEACON_SECRET is taken out of beaconctl's environment as it starts.
# What can be seen from outside is /proc/PID/environ, the memory the
# environment started in: the value is overwritten there. (That the
# variable is also unset, so that no child inherits it, only a child
# could tell, and beaconctl starts none.)

def environ_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError as e:
        pytest.skip(f"/proc/{pid}/environ: {e}")


def test_proc_environ_shows_the_secret_of_a_process_that_keeps_it():
    # the method can see a secret: a process that does not clear it
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); "
                               "sys.stdin.read()"],
        env=clean_env(HEX_SECRET), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"up\n"  # it runs: exec'd
        assert (b"BEACON_SECRET=" + HEX_SECRET.encode() + b"\0"
                in environ_of(proc.pid))
    finally:
        proc.stdin.close()  # its end of input: it exits
        proc.wait(TIMEOUT)
        proc.stdout.close()


def test_listen_keeps_the_key_but_not_the_secret(listen):
    listener = listen()  # BEACON_SECRET=HEX_SECRET; it has read it
    env = environ_of(listener.proc.pid)
    assert b"BEACON_SECRET=\0" in env  # the name, its value gone
    assert HEX_SECRET[4:].encode() not in env
    assert HEX_SECRET[4:20].encode() not in env
    # and the key it was read into still verifies
    udp_send(listener.port, run(["sign", "--ts", "now"],
                                secret=HEX_SECRET).stdout.rstrip("\n"))
    listener.expect(r"^accepted heartbeat ")


# ---------------------------------------------------------------------------
# listen --count

def test_count_exits_after_n_datagrams(listen):
    listener = listen("--count", "2")
    udp_send(listener.port, "not a beacon")
    udp_send(listener.port, "BEACON ts=1 mac=0000000000000000")
    assert listener.wait() == 0
    listener.expect(r"^dropped bad frame from 127\.0\.0\.1:\d+: "
                    r'"not a beacon"$')
    listener.expect(r"^dropped mac mismatch from ")
    assert len(listener.seen) == 3, listener.seen


# ---------------------------------------------------------------------------
# send

def send_once_accepted(listener, to, args, fields):
    """`send --once --to TO ARGS` exits 0, silent, and the listener (one
    datagram) accepts it with these fields, as an add."""
    r = run(["send", "--once", "--to", to] + args, secret=HEX_SECRET)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^accepted " + fields + r" from 127\.0\.0\.1:\d+ -> add$", line), line
    assert listener.wait() == 0


def test_send_once_is_accepted(listen):
    listener = listen("--count", "1")
    send_once_accepted(listener, f"udp://127.0.0.1:{listener.port}",
                       ["--url", "http://127.0.0.1:8080/", "--host", "web-2"],
                       r"url=http://127\.0\.0\.1:8080 host=web-2 pid=\d+ seq=0 ts=\d+")


def test_sigterm_sends_leaving_and_exits_0(listen, spawn):
    listener = listen()
    sender = spawn(["send", "--interval", "0.2",
                    "--to", f"127.0.0.1:{listener.port}",
                    "--url", "http://127.0.0.1:8082"])
    # two regular announcements prove the interval loop runs
    listener.expect(r"^accepted url=http://127\.0\.0\.1:8082 .* seq=0 .*"
                    r"-> add$")
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^accepted .* seq=1 ts=\d+ from .* -> renew$", line)
    stopped = time.monotonic()
    sender.proc.send_signal(signal.SIGTERM)
    assert sender.wait() == 0, sender.stderr()
    took = time.monotonic() - stopped
    assert sender.stderr() == ""
    line = listener.expect(r"state=")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8082 "
                     r"host=\S+ pid=\d+ seq=\d+ ts=\d+ "
                     r"state=leaving from 127\.0\.0\.1:\d+ "
                     r"-> disable$", line)
    # every line before it was a regular, accepted announcement
    for earlier in listener.seen[1:-1]:  # after "listening on"
        assert re.search(r"^accepted url=.* -> (add|renew)$", earlier)
    # one lost datagram must not keep a departed backend in rotation:
    # three more within the first second, each a new announcement,
    # which a receiver takes as nothing new
    lines = [line] + [listener.expect(r"state=leaving") for _ in range(3)]
    for repeat in lines[1:]:
        assert re.search(r"^accepted .* state=leaving .* -> ignore$", repeat)
    ts = [int(re.search(r" ts=(\d+) ", x).group(1)) for x in lines]
    assert ts == sorted(set(ts))
    assert ts[-1] - ts[0] < 1_500_000
    assert took < 3


def test_failing_target_is_reported_once_and_others_still_served(listen,
                                                                  spawn):
    listener = listen()
    # A send error without DNS and without traffic: the kernel refuses
    # a datagram to the broadcast address from a socket without
    # SO_BROADCAST (EACCES; ENETUNREACH without a route) before any
    # packet exists. All that is sent goes to 127.0.0.1.
    sender = spawn(["send", "--interval", "0.2",
                    "--to", "255.255.255.255:9",
                    "--to", f"127.0.0.1:{listener.port}",
                    "--url", "http://127.0.0.1:8083"])
    for seq in range(4):
        listener.expect(rf"^accepted url=http://127\.0\.0\.1:8083 .* "
                        rf"seq={seq} ")
    sender.proc.send_signal(signal.SIGTERM)
    assert sender.wait() == 0
    err = sender.stderr().splitlines()
    assert len(err) == 1, err
    assert re.search(r"^beaconctl: send: to 255\.255\.255\.255:9: "
                     r"cannot send to 255\.255\.255\.255:9: .* "
                     r"\(retrying; reported once a minute at most\)$", err[0])


def test_service_is_sent(listen):
    listener = listen("--count", "1", "--service", "shop")
    send_once_accepted(listener, f"127.0.0.1:{listener.port}",
                       ["--url", "http://127.0.0.1:8089", "--host", "web-3",
                        "--service", "shop"],
                       r"url=http://127\.0\.0\.1:8089 host=web-3 pid=\d+ seq=0 ts=\d+ svc=shop")


def test_route_and_lbfactor_are_sent_in_every_datagram(listen, spawn):
    listener = listen()
    sender = spawn(["send", "--interval", "0.2",
                    "--to", f"127.0.0.1:{listener.port}",
                    "--url", "http://127.0.0.1:8092", "--host", "web-4",
                    "--route", "web4", "--lbfactor", "3.25"])
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8092 "
                     r"host=web-4 pid=\d+ seq=0 ts=\d+ route=web4 "
                     r"lbfactor=3\.25 from 127\.0\.0\.1:\d+ -> add$", line)
    sender.proc.send_signal(signal.SIGTERM)
    assert sender.wait() == 0, sender.stderr()
    line = listener.expect(r"state=")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8092 .* "
                     r"route=web4 lbfactor=3\.25 state=leaving "
                     r"from 127\.0\.0\.1:\d+ -> disable$", line)


def test_state_and_ctx_are_sent_in_every_datagram_then_leaving(listen, spawn):
    listener = listen()
    sender = spawn(["send", "--interval", "0.2",
                    "--to", f"127.0.0.1:{listener.port}",
                    "--url", "http://127.0.0.1:8093", "--host", "web-5",
                    "--ctx", "/shop", "--state", "standby"])
    for action in ("add", "renew"):
        line = listener.expect(r"^(accepted|dropped) ")
        assert re.search(r"^accepted url=http://127\.0\.0\.1:8093 "
                         r"host=web-5 pid=\d+ seq=\d+ ts=\d+ "
                         r"ctx=/shop state=standby "
                         rf"from 127\.0\.0\.1:\d+ -> {action}$", line)
    sender.proc.send_signal(signal.SIGTERM)
    assert sender.wait() == 0, sender.stderr()
    line = listener.expect(r"state=leaving")
    assert re.search(r" ctx=/shop state=leaving from .* -> disable$", line)


@pytest.mark.parametrize("state,problem", [
    ("leaving", "says leaving itself"), ("paused", "draining or standby")])
def test_send_refuses_state_leaving_and_unknown_states(state, problem):
    assert_one_line_error(
        run(["send", "--once", "--to", "127.0.0.1:9", "--url",
             "http://127.0.0.1:8080", "--state", state], secret=HEX_SECRET),
        must_contain=["--state", problem])


def test_once_to_no_reachable_target_exits_1():
    r = run(["send", "--once", "--to", "255.255.255.255:9",
             "--url", "http://127.0.0.1:8084"], secret=HEX_SECRET)
    assert_one_line_error(r, status=1, must_contain=["255.255.255.255:9"])


# ---------------------------------------------------------------------------
# Usage and configuration errors: one line on stderr, exit 2.

@pytest.mark.parametrize("args", [
    ["send", "--once", "--to", "127.0.0.1:9"],
    ["listen", "--bind", "127.0.0.1:0"],
    ["sign", "--ts", "1"]])
def test_missing_secret(args):
    assert_one_line_error(run(args),
                          must_contain=["--secret-file", "BEACON_SECRET"])


@pytest.mark.parametrize("args", [
    ["sign", "--ts", "1", "--secret", HEX_SECRET],
    ["sign", "--ts", "1", f"--secret={HEX_SECRET}"],
    ["send", "--secret", HEX_SECRET, "--to", "127.0.0.1:9"]])
def test_secret_on_the_command_line_is_refused_without_echoing_it(args):
    r = run(args, secret=HEX_SECRET)
    assert_one_line_error(r, must_contain=["--secret-file"])
    assert "00112233" not in r.stderr


def test_bad_secrets(secret_file):
    short = secret_file("too short\n")
    r = run(["sign", "--ts", "1", "--secret-file", short])
    assert_one_line_error(r, must_contain=["16 bytes"])
    assert "too short" not in r.stderr
    r = run(["sign", "--ts", "1", "--secret-file", "/nonexistent/secret"])
    assert_one_line_error(r, must_contain=["/nonexistent/secret"])
    assert_one_line_error(run(["sign", "--ts", "1"], secret="hex:12"),
                          must_contain=["32 hex digits"])
    empty = secret_file("\n" + HEX_SECRET + "\n")  # first line only
    assert_one_line_error(run(["sign", "--ts", "1", "--secret-file", empty]),
                          must_contain=["empty"])
    # a passphrase cut at a NUL byte would silently be another key
    nul = secret_file(PASSPHRASE[:10] + "\0" + PASSPHRASE[10:])
    assert_one_line_error(run(["sign", "--ts", "1", "--secret-file", nul]),
                          must_contain=["NUL"])


@pytest.mark.parametrize("url,problem", [
    ("http://a.example/path", "path"), ("http://a.example:0", "port"),
    ("http://user@a.example", "userinfo")])
def test_bad_url_names_the_problem(url, problem):
    r = run(["send", "--once", "--to", "127.0.0.1:9", "--url", url],
            secret=HEX_SECRET)
    assert_one_line_error(r, must_contain=[url, problem])


@pytest.mark.parametrize("to", [
    "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "::1:5555", "[::1]",
    "host:80x", "1x://host:5555", ":5555"])
def test_bad_to(to):
    r = run(["send", "--once", "--to", to], secret=HEX_SECRET)
    assert_one_line_error(r, must_contain=[f"'{to}'"])


# A scheme is stripped and IPv6 goes in brackets. Without a secret the run
# stops at the secret, after --to was read: nothing is sent.
@pytest.mark.parametrize("to", [
    "udp://127.0.0.1:9", "tcp://127.0.0.1:9", "[::1]:9", "udp://[::1]:5555",
    "localhost:65535"])
def test_good_to_forms_are_accepted(to):
    r = run(["send", "--once", "--to", to, "--url", "http://127.0.0.1:8080"])
    assert_one_line_error(r, must_contain=["no secret"])


@pytest.mark.parametrize("args", [
    ["send", "--bogus"],
    ["send", "--once", "--interval", "1", "--to", "127.0.0.1:9"],
    ["send", "--interval", "0", "--to", "127.0.0.1:9"],
    ["send", "--interval", "5x", "--to", "127.0.0.1:9"],
    ["send", "--url", "http://a"],  # no --to
    ["send", "--to", "127.0.0.1:9", "--host", "two words"],
    ["send", "--to", "127.0.0.1:9", "--host", "h" * 2100],
    ["listen"],
    ["listen", "--bind", "127.0.0.1:0", "--count", "0"],
    ["listen", "--bind", "127.0.0.1:0", "--max-skew", "-1"],
    ["listen", "--bind", "127.0.0.1:0", "--service", "a b"],
    ["listen", "--bind", "127.0.0.1:0", "--service", "x", "--service", "y"],
    ["send", "--to", "127.0.0.1:9", "--service", "s" * 64],
    ["send", "--to", "127.0.0.1:9", "--route", "web/1"],
    ["send", "--to", "127.0.0.1:9", "--route", "r" * 64],
    ["send", "--to", "127.0.0.1:9", "--lbfactor", "0.5"],
    ["send", "--to", "127.0.0.1:9", "--lbfactor", "1.005"],
    ["send", "--to", "127.0.0.1:9", "--route", "a", "--route", "b"],
    ["sign", "--ts", "1", "--lbfactor", "2", "--lbfactor", "3"],
    ["sign"],
    ["sign", "--ts", "12x"],
    ["sign", "--ts", "1", "--pid", "-1"],
    ["sign", "--ts", "1", "--url", "http://a", "--url", "http://b"],
    ["sign", "--ts", "1", "stray"],
    ["frobnicate"],
    [],
])
def test_other_usage_errors(args):
    assert_one_line_error(run(args, secret=HEX_SECRET))


# accepted forms reach the secret check (no secret given): exit 2 with the
# secret message, not an --interval complaint
@pytest.mark.parametrize("value", ["5", "0.5", "500ms", "1.5s", ".25"])
def test_interval_forms(value):
    r = run(["send", "--interval", value, "--to", "127.0.0.1:9"])
    assert_one_line_error(r, must_contain=["no secret"])


# ---------------------------------------------------------------------------
# Where the secret comes from, as ProxyBeaconSecret says it: --secret-exec
# (or BEACON_SECRET=exec:...) runs a program and takes its first line,
# BEACON_SECRET=file:... reads a file, and any other WORD:/ is refused
# rather than signed with as a passphrase.

HEX = "hex:00112233445566778899aabbccddeeff"
PRINT_IT = f"/bin/sh -c 'echo {HEX}; echo ignored'"


def signed_ts_1(args, secret=None):
    """`sign --ts 1 ARGS`, which must succeed silently."""
    r = run(["sign", "--ts", "1"] + args, secret=secret)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return r.stdout


def test_secret_exec_signs_with_the_first_line_the_program_prints():
    want = signed_ts_1([], secret=HEX)
    assert signed_ts_1(["--secret-exec", PRINT_IT]) == want
    assert signed_ts_1([], secret="exec:" + PRINT_IT) == want
    assert signed_ts_1([], secret="EXEC:" + PRINT_IT) == want


def test_the_environment_may_name_a_file(secret_file):
    path = secret_file(HEX + "\n")
    assert (signed_ts_1([], secret="File:" + path)
            == signed_ts_1([], secret=HEX))


def test_a_failing_program_is_a_configuration_error():
    r = run(["sign", "--ts", "1", "--secret-exec",
             "/bin/sh -c 'echo leaky-secret-0123456789; exit 3'"])
    assert_one_line_error(r, must_contain=(
        "--secret-exec: exec: /bin/sh exited with status 3",))
    assert "leaky" not in r.stderr


@pytest.mark.parametrize("value", ["fiel:/etc/beacon.secret",
                                   "https://vault.example/secret"])
def test_a_source_beaconctl_does_not_know_is_refused(value):
    r = run(["sign", "--ts", "1"], secret=value)
    assert_one_line_error(r, must_contain=(
        "BEACON_SECRET: only file:/path and exec:/path [args]",))
    assert value not in r.stderr


@pytest.mark.parametrize("value", ["env:SECRET", "ENV:/SECRET"])
def test_env_is_refused_with_the_hint_to_give_the_secret_itself(value):
    r = run(["sign", "--ts", "1"], secret=value)
    assert_one_line_error(r, must_contain=(
        "BEACON_SECRET: env: is no source",
        "for beaconctl, the secret itself in BEACON_SECRET"))


@pytest.mark.parametrize("options", ["file-and-exec", "exec-twice"])
def test_one_secret_option_at_a_time(secret_file, options):
    path = secret_file(HEX + "\n")
    args = {"file-and-exec": ["--secret-file", path,
                              "--secret-exec", PRINT_IT],
            "exec-twice": ["--secret-exec", PRINT_IT] * 2}[options]
    r = run(["send", "--once", "--to", "127.0.0.1:9"] + args)
    assert_one_line_error(r, must_contain=("give one secret",))


# ---------------------------------------------------------------------------
# The secret-file rule, shared with ProxyBeaconSecret file:/path: the first
# line up to LF, one CR before the LF dropped, at most 4096 bytes, no NUL
# and no other CR. Each key is checked against one computed here (by
# beacon_wire's key rule): a passphrase's key is the first 16 bytes of its
# SHA-1, handed to beaconctl as hex: through BEACON_SECRET, so that the
# expected datagram depends on neither the file rule nor the passphrase
# hashing under test.

LIMIT = 4096
LINE_ENDS = {"LF": "\n", "CRLF": "\r\n", "none": ""}


def passphrase(n):
    """n printable bytes, no two prefixes alike: a key cut short by even
    one byte is another key."""
    chars = itertools.cycle("abcdefghijklmnopqrstuvwxyz0123456789-_")
    return "".join(next(chars) for _ in range(n - 8)) + f"{n:08d}"


def expected(phrase):
    """`sign --ts 1` under the key of phrase, computed here."""
    r = run(["sign", "--ts", "1"], secret="hex:" + bw.parse_key(phrase).hex())
    assert r.returncode == 0, r.stderr
    return r.stdout


def signed_with_file(path):
    out = signed_ts_1(["--secret-file", path])
    assert re.search(r"^BEACON ts=1 mac=[0-9a-f]{16}\n$", out)
    return out


def refused(path, must_contain):
    r = run(["sign", "--ts", "1", "--secret-file", path])
    assert_one_line_error(r, must_contain=must_contain)
    return r.stderr


# 1023 and 1024: around where httpd once cut the line silently
@pytest.mark.parametrize("end", LINE_ENDS.values(), ids=LINE_ENDS.keys())
@pytest.mark.parametrize("n", [1023, 1024, LIMIT])
def test_lines_up_to_the_limit_give_the_key_of_exactly_those_bytes(
        secret_file, n, end):
    phrase = passphrase(n)
    assert len(phrase) == n
    path = secret_file(phrase + end + "next line\n" if end else phrase)
    assert signed_with_file(path) == expected(phrase)


def test_a_key_cut_by_one_byte_would_be_noticed():
    # the check above is only as good as this: another length, another key
    assert expected(passphrase(1024)) != expected(passphrase(1024)[:1023])


@pytest.mark.parametrize("end", LINE_ENDS.values(), ids=LINE_ENDS.keys())
def test_a_line_over_the_limit_is_an_error_naming_the_limit(secret_file, end):
    phrase = passphrase(LIMIT + 1)
    path = secret_file(phrase + end)
    err = refused(path, ["--secret-file", path, "4096"])
    assert phrase[:64] not in err


def test_crlf_line_end_gives_the_same_key_as_lf(secret_file):
    phrase = passphrase(40)
    lf = signed_with_file(secret_file(phrase + "\n"))
    crlf = signed_with_file(secret_file(phrase + "\r\n"))
    assert crlf == lf
    assert lf == expected(phrase)


# one tool would end the line at the CR and another not
@pytest.mark.parametrize("content", [
    "first-half-of-it\rsecond-half-of-it\n", "a-long-passphrase-then-cr\r\r\n",
    "\ra-long-passphrase-after-cr\n"])
def test_a_cr_inside_the_line_is_an_error(secret_file, content):
    path = secret_file(content)
    err = refused(path, ["--secret-file", path, "CR"])
    assert "half-of-it" not in err
    assert "long-passphrase" not in err


@pytest.mark.parametrize("content", [
    b"a-long-passphrase\0and-more\n", b"\0" * 20,
    b"hex:00112233445566778899aabbccddeeff\0\n"])
def test_a_nul_is_an_error(secret_file, content):
    path = secret_file(content)
    err = refused(path, ["--secret-file", path, "NUL"])
    assert "long-passphrase" not in err


def test_no_trailing_newline_is_fine(secret_file):
    phrase = passphrase(100)
    assert signed_with_file(secret_file(phrase)) == expected(phrase)
    assert (signed_with_file(secret_file(HEX_SECRET))
            == signed_with_file(secret_file(HEX_SECRET + "\n")))


FIRST, SECOND = passphrase(30), passphrase(50)


@pytest.mark.parametrize("rest", [
    SECOND + "\n", SECOND, "\n", "\r\n",
    # what follows the first LF is never looked at
    "x" * 10000 + "\r\0\n", "\0\r"], ids=lambda rest: repr(rest[:20]))
def test_only_the_first_line_counts(secret_file, rest):
    path = secret_file(FIRST + "\n" + rest)
    assert signed_with_file(path) == expected(FIRST)


def test_the_first_and_the_second_line_have_different_keys():
    # the check above is only as good as this
    assert expected(FIRST) != expected(SECOND)


def test_an_unreadable_file_is_named_once(secret_file):
    path = os.path.join(secret_file("unused"), "not-a-directory")
    err = refused(path, ["--secret-file"])
    assert err.count(path) == 1, err


# ---------------------------------------------------------------------------
# --help

OPTIONS = {
    "send": ["--to", "--url", "--host", "--service", "--ctx", "--route",
             "--lbfactor", "--interval", "--lbfactor-command",
             "--lbfactor-from", "--state", "--once", "--verbose",
             "--secret-file", "--secret-exec", "--help"],
    "drain": ["--for", "--until-command", "--to", "--url", "--host",
              "--service", "--ctx", "--route", "--lbfactor", "--interval",
              "--verbose", "--secret-file", "--secret-exec", "--help"],
    "listen": ["--bind", "--max-skew", "--count", "--service", "--allow",
               "--secret-file", "--secret-exec", "--master-file",
               "--master-exec", "--help"],
    "sign": ["--url", "--host", "--pid", "--seq", "--ts", "--service",
             "--ctx", "--route", "--lbfactor", "--state", "--secret-file",
             "--secret-exec", "--help"],
    "keygen": ["--help"],
    "derive-key": ["--url", "--service", "--secret-file", "--secret-exec",
                   "--help"],
}


def test_every_option_is_documented():
    top = run(["--help"])
    assert top.returncode == 0
    assert "BEACON_SECRET" in top.stdout
    for cmd, options in OPTIONS.items():
        r = run([cmd, "--help"])
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        assert r.stdout.startswith(f"usage: beaconctl {cmd}")
        assert r.stdout in top.stdout
        for opt in options:
            assert re.search(rf"\n  (-h, )?{opt}\b", r.stdout), f"{cmd} {opt}"
        for line in r.stdout.splitlines():
            assert len(line) <= 79, line
        # and each documented option is accepted, nothing more
        documented = set(re.findall(r"\n  (?:-h, )?(--[a-z-]+)", r.stdout))
        assert documented == set(options)
