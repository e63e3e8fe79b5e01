#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Behaviour of the beaconctl command-line tool.

Run by ctest (see CMakeLists.txt, "# beaconctl"), one entry per test class:

    /usr/bin/python3 tests/cli/test_beaconctl.py -v SignTest

The binary comes from the environment variable BEACONCTL (ctest sets it),
else build/beaconctl. Stdlib only. Everything talks over 127.0.0.1; every
wait polls for a condition with a deadline, and only the processes a test
started are signalled, through their own Popen objects.
"""

import hashlib
import itertools
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BEACONCTL = os.environ.get("BEACONCTL") or os.path.join(
    HERE, "..", "..", "build", "beaconctl")



def vectors():
    """Every row of tests/vectors/announcements.txt (docs/wire-format.md,
    "Test vectors"), [(version, secret, datagram)] in file order. These rows
    hold no escape (tests/vectors/README.md), which is checked."""
    path = os.path.join(HERE, "..", "vectors", "announcements.txt")
    with open(path, encoding="ascii") as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    assert lines[0] == "version\tsecret\tdatagram", lines[0]
    rows = [tuple(l.split("\t")) for l in lines[1:]]
    assert not any("\\" in d for _, _, d in rows), rows
    return rows


def v1_vectors():
    """The v1 rows, [(secret, datagram)]."""
    v1 = [(secret, datagram) for version, secret, datagram in vectors()
          if version == "v1"]
    assert len(v1) == 3, v1
    return v1


# The url announcement and the heartbeat under the hex: secret, then the
# url announcement under the passphrase.
[(HEX_SECRET, VECTOR_URL), (_, VECTOR_HEARTBEAT),
 (PASSPHRASE, VECTOR_PASSPHRASE)] = v1_vectors()

# The v1.1 announcement with a route and a load factor.
[VECTOR_ROUTE] = [d for v, _, d in vectors()
                  if v == "v1.1" and " route=" in d and " lbfactor=" in d]

TIMEOUT = 10.0  # seconds: the bound on every wait; nothing sleeps a fixed time


def siphash24(key, msg):
    """SipHash-2-4 of msg under a 16-byte key (the wire format's MAC), for
    datagrams beaconctl sign refuses to write."""
    mask = (1 << 64) - 1

    def rotl(x, b):
        return ((x << b) | (x >> (64 - b))) & mask

    def sipround(v):
        v[0] = (v[0] + v[1]) & mask
        v[1] = rotl(v[1], 13) ^ v[0]
        v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & mask
        v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & mask
        v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & mask
        v[1] = rotl(v[1], 17) ^ v[2]
        v[2] = rotl(v[2], 32)

    def absorb(v, m):
        v[3] ^= m
        sipround(v)
        sipround(v)
        v[0] ^= m

    k0, k1 = (int.from_bytes(key[i:i + 8], "little") for i in (0, 8))
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    tail = len(msg) % 8
    for i in range(0, len(msg) - tail, 8):
        absorb(v, int.from_bytes(msg[i:i + 8], "little"))
    absorb(v, (len(msg) & 0xff) << 56
           | int.from_bytes(msg[len(msg) - tail:], "little"))
    v[2] ^= 0xff
    for _ in range(4):
        sipround(v)
    return (v[0] ^ v[1] ^ v[2] ^ v[3]).to_bytes(8, "little")


def sign_body(body, secret=HEX_SECRET):
    """body (the signed part, str) + " mac=" + its tag under a hex: secret."""
    key = bytes.fromhex(secret[len("hex:"):])
    return body + " mac=" + siphash24(key, body.encode()).hex()


def clean_env(secret=None):
    """The environment for beaconctl: BEACON_SECRET only when asked for."""
    env = {k: v for k, v in os.environ.items() if k != "BEACON_SECRET"}
    if secret is not None:
        env["BEACON_SECRET"] = secret
    return env


def run(args, secret=None, timeout=TIMEOUT):
    return subprocess.run([BEACONCTL] + list(args), env=clean_env(secret),
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def udp_send(port, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(payload, ("127.0.0.1", port))


def now_usec():
    return time.time_ns() // 1000


class Process:
    """A beaconctl process whose stdout lines are read by a thread, so that a
    test can wait for a line with a deadline."""

    def __init__(self, args, secret=HEX_SECRET, launcher=()):
        # launcher: a command that ends by exec'ing beaconctl (its args
        # follow), so that self.proc is beaconctl itself
        self.proc = subprocess.Popen(
            list(launcher) + [BEACONCTL] + list(args), env=clean_env(secret),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.seen = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # end of output

    def expect(self, pattern, timeout=TIMEOUT):
        """The next stdout line matching pattern (a regex), waiting at most
        timeout seconds; lines before it are kept in self.seen."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r} within "
                                     f"{timeout} s; seen: {self.seen}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"output ended before a line matching "
                                     f"{pattern!r}; seen: {self.seen}; "
                                     f"stderr: {self.stderr()}")
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def wait(self, timeout=TIMEOUT):
        return self.proc.wait(timeout=timeout)

    def stderr(self):
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read()

    def stop(self):
        """Ends the process if it is still running (only this one, by its
        own handle) and reaps it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        self.reader.join(timeout=TIMEOUT)
        self.proc.stdout.close()
        self.proc.stderr.close()


class Listener(Process):
    """`beaconctl listen` on a free loopback port chosen by the kernel
    (--bind 127.0.0.1:0): its first line names the port, so there is no
    race for a port between choosing it and binding it."""

    def __init__(self, *extra, secret=HEX_SECRET):
        super().__init__(["listen", "--bind", "127.0.0.1:0"] + list(extra),
                         secret=secret)
        line = self.expect(r"^listening on ")
        m = re.match(r"^listening on 127\.0\.0\.1:(\d+) ", line)
        if not m:
            self.stop()
            raise AssertionError(f"unexpected first line: {line!r}")
        self.port = int(m.group(1))


class CliTestCase(unittest.TestCase):
    def assert_one_line_error(self, r, status=2, must_contain=()):
        """A usage or configuration error: status, nothing on stdout, exactly
        one line on stderr, prefixed "beaconctl: "."""
        self.assertEqual(r.returncode, status, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertTrue(r.stderr.endswith("\n"), repr(r.stderr))
        self.assertEqual(r.stderr.count("\n"), 1, repr(r.stderr))
        self.assertTrue(r.stderr.startswith("beaconctl: "), repr(r.stderr))
        for text in must_contain:
            self.assertIn(text, r.stderr)

    def secret_file(self, content):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        path = os.path.join(d.name, "secret")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(content)
        return path


class SignTest(CliTestCase):
    """sign prints exactly the wire-format.md vectors."""

    def sign(self, *args, secret=None):
        r = run(["sign"] + list(args), secret=secret)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertTrue(r.stdout.endswith("\n"))
        return r.stdout[:-1]

    def test_hex_key_from_secret_file_gives_the_url_vector(self):
        path = self.secret_file(HEX_SECRET + "\n")
        self.assertEqual(self.sign(
            "--url", "http://10.0.0.5:8080", "--host", "web-1", "--pid",
            "4242", "--seq", "17", "--ts", "1796000000000000",
            "--secret-file", path), VECTOR_URL)

    def test_heartbeat_without_url_gives_the_heartbeat_vector(self):
        path = self.secret_file(HEX_SECRET)  # no trailing newline
        self.assertEqual(self.sign(
            "--host", "web-1", "--pid", "4242", "--seq", "18",
            "--ts", "1796000000000001", "--secret-file", path),
            VECTOR_HEARTBEAT)

    def test_passphrase_key_from_environment_gives_the_passphrase_vector(self):
        self.assertEqual(self.sign(
            "--url", "http://10.0.0.5:8080", "--host", "web-1", "--pid",
            "4242", "--seq", "17", "--ts", "1796000000000000",
            secret=PASSPHRASE), VECTOR_PASSPHRASE)

    def test_passphrase_from_file_with_crlf_line_end(self):
        path = self.secret_file(PASSPHRASE + "\r\nsecond line ignored\n")
        self.assertEqual(self.sign(
            "--url", "http://10.0.0.5:8080", "--host", "web-1", "--pid",
            "4242", "--seq", "17", "--ts", "1796000000000000",
            "--secret-file", path), VECTOR_PASSPHRASE)

    def test_secret_file_wins_over_environment(self):
        path = self.secret_file(HEX_SECRET + "\n")
        self.assertEqual(self.sign(
            "--url", "http://10.0.0.5:8080", "--host", "web-1", "--pid",
            "4242", "--seq", "17", "--ts", "1796000000000000",
            "--secret-file", path, secret=PASSPHRASE), VECTOR_URL)

    def test_url_is_canonicalized_and_state_written_before_mac(self):
        out = self.sign("--url", "HTTP://App.Example.COM:80/", "--ts", "5",
                        "--state", "leaving", secret=HEX_SECRET)
        self.assertRegex(out, r"^BEACON url=http://app\.example\.com ts=5 "
                              r"state=leaving mac=[0-9a-f]{16}$")

    def test_service_is_written_after_ts_and_before_state(self):
        out = self.sign("--url", "http://10.0.0.5:8080", "--ts", "5",
                        "--state", "leaving", "--service", "Shop.EU-1_blue",
                        secret=HEX_SECRET)
        self.assertRegex(out, r"^BEACON url=http://10\.0\.0\.5:8080 ts=5 "
                              r"svc=Shop\.EU-1_blue state=leaving "
                              r"mac=[0-9a-f]{16}$")

    def test_an_invalid_service_is_a_usage_error_naming_the_rule(self):
        for name in ("", "my shop", "shop!", "s" * 64, "caf\u00e9"):
            with self.subTest(name=name):
                r = run(["sign", "--ts", "5", "--service", name],
                        secret=HEX_SECRET)
                self.assert_one_line_error(
                    r, must_contain=["--service", "1 to 63",
                                     "A-Z a-z 0-9 . _ -"])
        r = run(["sign", "--ts", "5", "--service", "s" * 63], secret=HEX_SECRET)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_route_and_lbfactor_give_the_v1_1_vector(self):
        self.assertEqual(self.sign(
            "--url", "http://10.0.0.5:8080", "--host", "web-1", "--pid",
            "4242", "--seq", "19", "--ts", "1796000000000002",
            "--route", "web1", "--lbfactor", "2.5", secret=HEX_SECRET),
            VECTOR_ROUTE)

    # The option of sign that writes each field of the wire format.
    OPTION_OF = {"url": "--url", "host": "--host", "pid": "--pid",
                 "seq": "--seq", "ts": "--ts", "svc": "--service",
                 "ctx": "--ctx", "route": "--route", "lbfactor": "--lbfactor",
                 "state": "--state"}

    def test_every_vector_is_signed_again_from_its_fields(self):
        # v1, v1.1 and v1.2 rows alike: a row added to the file is checked too
        for version, secret, datagram in vectors():
            with self.subTest(version=version, datagram=datagram):
                fields = [t.split("=", 1) for t in datagram.split(" ")[1:-1]]
                args = [a for k, v in fields for a in (self.OPTION_OF[k], v)]
                self.assertEqual(self.sign(*args, secret=secret), datagram)

    def test_route_and_lbfactor_are_written_between_svc_and_state(self):
        out = self.sign("--ts", "5", "--state", "leaving", "--lbfactor", "100",
                        "--route", "node-2.eu_1", "--service", "shop",
                        secret=HEX_SECRET)
        self.assertRegex(out, r"^BEACON ts=5 svc=shop route=node-2\.eu_1 "
                              r"lbfactor=100 state=leaving mac=[0-9a-f]{16}$")

    def test_an_invalid_route_or_lbfactor_is_a_usage_error_naming_the_rule(self):
        bad = [("--route", v, ["1 to 63", "A-Z a-z 0-9 . _ -", "route="])
               for v in ("", "web/1", "web 1", "r" * 64, "caf\u00e9")]
        bad += [("--lbfactor", v, ["1 to 100", "two decimals", "lbfactor="])
                for v in ("", "0", "0.99", "100.01", "101", "2.555", "-1",
                          "+2", "1e2", "2.", ".5", "2,5", " 2")]
        for option, value, words in bad:
            with self.subTest(option=option, value=value):
                r = run(["sign", "--ts", "5", option, value], secret=HEX_SECRET)
                self.assert_one_line_error(
                    r, must_contain=[f"{option} '", *words])
        for option, value in (("--route", "r" * 63), ("--lbfactor", "1"),
                              ("--lbfactor", "100"), ("--lbfactor", "99.99"),
                              ("--lbfactor", "007.5")):
            with self.subTest(option=option, value=value):
                out = self.sign("--ts", "5", option, value, secret=HEX_SECRET)
                self.assertIn(f" {option[2:]}={value} ", out)

    def test_an_invalid_ctx_or_state_is_a_usage_error_naming_the_rule(self):
        for bad in ("shop", "/shop/", "/a,,/b", "/a/../b", "/a%20b",
                    ",".join(f"/p{i}" for i in range(17))):
            with self.subTest(ctx=bad):
                self.assert_one_line_error(
                    run(["sign", "--ts", "5", "--ctx", bad], secret=HEX_SECRET),
                    must_contain=["--ctx", "1 to 16 paths", "ctx= rule"])
        for bad in ("paused", "Leaving", "draining "):
            with self.subTest(state=bad):
                self.assert_one_line_error(
                    run(["sign", "--ts", "5", "--state", bad], secret=HEX_SECRET),
                    must_contain=["--state", "leaving, draining or standby"])
        for good in ("leaving", "draining", "standby"):
            self.assertIn(f" state={good} ",
                          self.sign("--ts", "5", "--state", good,
                                    secret=HEX_SECRET))

    def test_ts_now_is_this_clock(self):
        before = now_usec()
        out = self.sign("--ts", "now", secret=HEX_SECRET)
        after = now_usec()
        ts = int(re.match(r"^BEACON ts=(\d+) mac=[0-9a-f]{16}$", out).group(1))
        self.assertLessEqual(before, ts)
        self.assertLessEqual(ts, after)


class KeygenTest(CliTestCase):
    def keygen(self):
        r = run(["keygen"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertRegex(r.stdout, r"\A" + r"hex:[0-9a-f]{32}" + r"\n\Z")
        return r.stdout[:-1]

    def test_two_keys_differ_and_each_parses(self):
        a, b = self.keygen(), self.keygen()
        self.assertNotEqual(a, b)
        for key in (a, b):
            r = run(["sign", "--ts", "1"], secret=key)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"^BEACON ts=1 mac=[0-9a-f]{16}\n$")

    def test_arguments_are_refused(self):
        self.assert_one_line_error(run(["keygen", "extra"]))


class ListenTest(CliTestCase):
    """listen reports what a receiver decides, one flushed line each."""

    def setUp(self):
        self.listener = Listener()
        self.addCleanup(self.listener.stop)

    def test_signed_datagram_is_accepted_and_forged_one_dropped(self):
        ts = now_usec()
        good = run(["sign", "--url", "HTTP://127.0.0.1:8080/", "--host",
                    "web-1", "--pid", "42", "--seq", "0", "--ts", str(ts)],
                   secret=HEX_SECRET).stdout.rstrip("\n")
        udp_send(self.listener.port, good)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, rf"^accepted url=http://127\.0\.0\.1:8080 "
                               rf"host=web-1 pid=42 seq=0 ts={ts} "
                               rf"from 127\.0\.0\.1:\d+ -> add$")

        # one hex digit of the mac changed
        last = good[-1]
        forged = good[:-1] + ("0" if last != "0" else "1")
        udp_send(self.listener.port, forged)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped mac mismatch from 127\.0\.0\.1:\d+")

        # the same datagram again: the replay check has seen its ts
        udp_send(self.listener.port, good)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped replayed/reordered ts from ")

    def test_accepted_lines_show_the_v1_1_fields_in_wire_order(self):
        ts = now_usec()
        signed = run(["sign", "--url", "http://127.0.0.1:8085",
                      "--host", "web-1", "--ts", str(ts), "--service", "cart",
                      "--route", "web1", "--lbfactor", "2.5",
                      "--state", "leaving"],
                     secret=HEX_SECRET).stdout.rstrip("\n")
        udp_send(self.listener.port, signed)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, rf"^accepted url=http://127\.0\.0\.1:8085 "
                               rf"host=web-1 ts={ts} svc=cart route=web1 "
                               rf"lbfactor=2\.5 state=leaving "
                               rf"from 127\.0\.0\.1:\d+ -> ignore$")
        heartbeat = run(["sign", "--ts", "now", "--service", "cart"],
                        secret=HEX_SECRET).stdout.rstrip("\n")
        udp_send(self.listener.port, heartbeat)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^accepted heartbeat ts=\d+ svc=cart "
                               r"from 127\.0\.0\.1:\d+$")

    def test_accepted_lines_show_svc_ctx_and_state_of_v1_2(self):
        ts = now_usec()
        signed = run(["sign", "--url", "http://127.0.0.1:8087", "--ts", str(ts),
                      "--service", "shop", "--ctx", "/shop,/cart",
                      "--state", "draining"],
                     secret=HEX_SECRET).stdout.rstrip("\n")
        udp_send(self.listener.port, signed)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, rf"^accepted url=http://127\.0\.0\.1:8087 "
                               rf"ts={ts} svc=shop ctx=/shop,/cart "
                               rf"state=draining from 127\.0\.0\.1:\d+ -> add$")

    def test_a_bad_route_or_lbfactor_is_a_bad_field_named_by_its_key(self):
        # sign refuses them, so the datagrams are signed here
        for key, value in (("route", "web/1"), ("lbfactor", "0.5"),
                           ("ctx", "/shop/"), ("state", "paused")):
            body = (f"BEACON url=http://127.0.0.1:8091 ts={now_usec()} "
                    f"{key}={value}")
            udp_send(self.listener.port, sign_body(body))
            line = self.listener.expect(r"^(accepted|dropped) ")
            self.assertRegex(line, rf"^dropped bad field {key} from "
                                   rf"127\.0\.0\.1:\d+: \"BEACON .* "
                                   rf"{key}={re.escape(value)} mac=")

    def test_a_bad_svc_is_a_bad_field_named_by_its_key(self):
        # sign refuses a bad service, so the datagram is signed here
        body = f"BEACON url=http://127.0.0.1:8086 ts={now_usec()} svc=shop!"
        udp_send(self.listener.port, sign_body(body))
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped bad field svc from 127\.0\.0\.1:\d+: "
                               r'"BEACON .* svc=shop! mac=[0-9a-f]{16}"$')

    def test_peer_bytes_are_escaped(self):
        udp_send(self.listener.port, b"BEACON \x01\xff\"\\ \x1b[2J")
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertTrue(line.startswith("dropped bad frame from 127.0.0.1:"),
                        line)
        self.assertIn(r'"BEACON \x01\xff\x22\x5c \x1b[2J"', line)
        self.assertTrue(line.isprintable(), repr(line))

    def test_stale_ts_and_heartbeat(self):
        stale = run(["sign", "--url", "http://127.0.0.1:8081",
                     "--ts", str(now_usec() - 120 * 1000000)],
                    secret=HEX_SECRET).stdout.rstrip("\n")
        udp_send(self.listener.port, stale)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped stale ts from 127\.0\.0\.1:\d+: "
                               r"ts=\d+ is 1[12]\d\.\d{3} s behind this clock")

        heartbeat = run(["sign", "--host", "hb-1", "--ts", "now"],
                        secret=HEX_SECRET).stdout.rstrip("\n")
        udp_send(self.listener.port, heartbeat)
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^accepted heartbeat host=hb-1 ts=\d+ "
                               r"from 127\.0\.0\.1:\d+$")


class ListenRotationTest(CliTestCase):
    """listen with one --secret-file per secret, as a proxy in a rotation."""

    OTHER = "hex:ffeeddccbbaa99887766554433221100"
    STRANGER = "hex:0f0e0d0c0b0a09080706050403020100"

    def signed(self, secret, url):
        r = run(["sign", "--url", url, "--ts", "now",
                 "--secret-file", self.secret_file(secret + "\n")])
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.rstrip("\n")

    def test_any_of_the_secrets_verifies(self):
        listener = Listener("--secret-file", self.secret_file(self.OTHER),
                            "--secret-file", self.secret_file(HEX_SECRET),
                            secret=None)
        self.addCleanup(listener.stop)
        for secret, port in ((HEX_SECRET, 8091), (self.OTHER, 8092)):
            udp_send(listener.port, self.signed(secret, f"http://127.0.0.1:{port}"))
            line = listener.expect(r"^(accepted|dropped) ")
            self.assertRegex(line, rf"^accepted url=http://127\.0\.0\.1:{port} ")
        udp_send(listener.port, self.signed(self.STRANGER, "http://127.0.0.1:8093"))
        line = listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped mac mismatch from 127\.0\.0\.1:\d+ "
                               r"\(not signed with any of these secrets\?\)")

    def test_more_than_four_secret_files_is_a_usage_error(self):
        f = self.secret_file(HEX_SECRET)
        r = run(["listen", "--bind", "127.0.0.1:0"] + ["--secret-file", f] * 5)
        self.assert_one_line_error(r, must_contain=["--secret-file", "at most 4"])


class ListenServiceTest(CliTestCase):
    """listen --service decides as a proxy with ProxyBeaconService."""

    def setUp(self):
        self.listener = Listener("--service", "shop")
        self.addCleanup(self.listener.stop)

    def signed(self, *args, ts="now"):
        r = run(["sign", "--ts", str(ts)] + list(args), secret=HEX_SECRET)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.rstrip("\n")

    def test_the_banner_names_the_service(self):
        self.assertRegex(self.listener.seen[0],
                         r"^listening on 127\.0\.0\.1:\d+ "
                         r"\(max skew 30 s, service shop\)$")

    def test_only_datagrams_for_its_service_are_accepted(self):
        port = self.listener.port
        udp_send(port, self.signed("--url", "http://127.0.0.1:8087",
                                   "--service", "cart"))
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped wrong service from 127\.0\.0\.1:\d+: "
                               r"svc=cart \(this receiver is for shop\)$")
        udp_send(port, self.signed("--url", "http://127.0.0.1:8087"))
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped wrong service from 127\.0\.0\.1:\d+: "
                               r"no svc \(this receiver is for shop\)$")
        udp_send(port, self.signed("--service", "Shop"))
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^dropped wrong service .*: svc=Shop ")
        udp_send(port, self.signed("--url", "http://127.0.0.1:8087",
                                   "--service", "shop"))
        line = self.listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^accepted url=http://127\.0\.0\.1:8087 ts=\d+ "
                               r"svc=shop from 127\.0\.0\.1:\d+ -> add$")

    def test_a_foreign_datagram_moves_no_replay_mark(self):
        # a later ts for another service, then the member's own older one
        ts = now_usec()
        port = self.listener.port
        for service, at in (("shop", ts), ("cart", ts + 2), ("shop", ts + 1)):
            udp_send(port, self.signed("--url", "http://127.0.0.1:8088",
                                       "--service", service, ts=at))
        self.listener.expect(rf"^accepted .* ts={ts} svc=shop .* -> add$")
        self.listener.expect(r"^dropped wrong service ")
        self.listener.expect(rf"^accepted .* ts={ts + 1} svc=shop .* -> renew$")


class ListenAllowTest(CliTestCase):
    """listen --allow decides as a proxy with ProxyBeaconAllow: libbeacon's
    reach rule, "source" being the address each datagram came from. Nothing
    connects to these urls (listen only prints verdicts), so a link-local
    one is safe to announce here."""

    def listener(self, *allow):
        args = []
        for entry in allow:
            args += ["--allow", entry]
        listener = Listener(*args)
        self.addCleanup(listener.stop)
        return listener

    def signed(self, url):
        r = run(["sign", "--url", url, "--ts", "now"], secret=HEX_SECRET)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.rstrip("\n")

    def verdict(self, listener, url, source="127.0.0.1"):
        """The line for url, announced from source (a loopback address)."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((source, 0))
            s.sendto(self.signed(url).encode(), ("127.0.0.1", listener.port))
        return listener.expect(r"^(accepted|dropped) ")

    def assert_accepted(self, listener, url, canonical, source="127.0.0.1"):
        self.assertRegex(self.verdict(listener, url, source),
                         rf"^accepted url={re.escape(canonical)} .*"
                         rf"from {re.escape(source)}:\d+ -> add$")

    def assert_refused(self, listener, url, canonical, why,
                       source="127.0.0.1"):
        self.assertRegex(self.verdict(listener, url, source),
                         rf"^dropped url not allowed from "
                         rf"{re.escape(source)}:\d+: "
                         rf"url={re.escape(canonical)} \({why}\)$")

    def test_the_defaults_refuse_link_local_only(self):
        listener = self.listener()
        self.assertRegex(listener.seen[0], r"^listening on 127\.0\.0\.1:\d+ "
                                           r"\(max skew 30 s\)$")
        self.assert_refused(listener, "http://169.254.169.254",
                            "http://169.254.169.254", r"a link-local .*")
        self.assert_refused(listener, "HTTP://169.254.169.254:80/",
                            "http://169.254.169.254", r"a link-local .*")
        self.assert_accepted(listener, "http://127.0.0.1:8101",
                             "http://127.0.0.1:8101")

    def test_an_address_allows_itself_only(self):
        listener = self.listener("127.0.0.2")
        self.assertRegex(listener.seen[0], r"^listening on 127\.0\.0\.1:\d+ "
                                           r"\(max skew 30 s, allow "
                                           r"127\.0\.0\.2\)$")
        self.assert_refused(listener, "http://127.0.0.1:8102",
                            "http://127.0.0.1:8102", "no entry allows it")
        self.assert_accepted(listener, "http://127.0.0.2:8102",
                             "http://127.0.0.2:8102")

    def test_source_is_the_address_the_datagram_came_from(self):
        listener = self.listener("source")
        self.assert_accepted(listener, "http://127.0.0.1:8103",
                             "http://127.0.0.1:8103")
        self.assert_refused(listener, "http://127.0.0.2:8103",
                            "http://127.0.0.2:8103", "no entry allows it")
        # the same url from 127.0.0.2 itself is its sender's address
        self.assert_accepted(listener, "http://127.0.0.2:8103",
                             "http://127.0.0.2:8103", source="127.0.0.2")
        # and "source" never opens link-local
        self.assert_refused(listener, "http://169.254.169.254",
                            "http://169.254.169.254", r"a link-local .*")

    def test_a_suffix_allows_names_under_it_only(self):
        listener = self.listener("*.svc.local")
        self.assert_accepted(listener, "http://a.svc.local",
                             "http://a.svc.local")
        self.assert_accepted(listener, "http://B.a.SVC.local:8104",
                             "http://b.a.svc.local:8104")
        self.assert_refused(listener, "http://svc.local", "http://svc.local",
                            "no entry allows it")
        # a name entry never allows an address, nor an address a name
        self.assert_refused(listener, "http://127.0.0.1:8104",
                            "http://127.0.0.1:8104", "no entry allows it")

    def test_lists_add_up(self):
        listener = self.listener("127.0.0.2,*.svc.local", "10.0.0.0/8",
                                 "127.0.0.2")
        self.assertRegex(listener.seen[0], r", allow 127\.0\.0\.2 "
                                           r"\*\.svc\.local 10\.0\.0\.0/8\)$")
        self.assert_accepted(listener, "http://a.svc.local:8105",
                             "http://a.svc.local:8105")
        self.assert_accepted(listener, "http://127.0.0.2:8105",
                             "http://127.0.0.2:8105")
        self.assert_refused(listener, "http://127.0.0.3:8105",
                            "http://127.0.0.3:8105", "no entry allows it")

    def test_a_bad_entry_is_a_usage_error_naming_it(self):
        for allow, entry, problem in (
                ("10.1.0.0/8", "10.1.0.0/8", "bits set past its prefix"),
                ("127.0.0.1,10.1.0.0/8", "10.1.0.0/8", "prefix length"),
                ("127.0.0.1,,a.svc.local", "", "an empty entry"),
                ("a.*.local", "a.*.local", "wildcard"),
                ("[::1]", "[::1]", "without brackets")):
            with self.subTest(allow=allow):
                r = run(["listen", "--bind", "127.0.0.1:0", "--allow", allow],
                        secret=HEX_SECRET)
                self.assert_one_line_error(
                    r, must_contain=[f"--allow '{entry}': ", problem])


class SecretEnvironmentTest(CliTestCase):
    """BEACON_SECRET is taken out of beaconctl's environment as it starts.
    What can be seen from outside is /proc/PID/environ, the memory the
    environment started in: the value is overwritten there. (That the
    variable is also unset, so that no child inherits it, only a child
    could tell, and beaconctl starts none.)"""

    def environ_of(self, pid):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                return f.read()
        except OSError as e:
            self.skipTest(f"/proc/{pid}/environ: {e}")

    def test_proc_environ_shows_the_secret_of_a_process_that_keeps_it(self):
        # the method can see a secret: a process that does not clear it
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; print('up', flush=True); "
                                   "sys.stdin.read()"],
            env=clean_env(HEX_SECRET), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait, TIMEOUT)
        self.addCleanup(proc.stdin.close)
        self.assertEqual(proc.stdout.readline(), b"up\n")  # it runs: exec'd
        self.assertIn(b"BEACON_SECRET=" + HEX_SECRET.encode() + b"\0",
                      self.environ_of(proc.pid))

    def test_listen_keeps_the_key_but_not_the_secret(self):
        listener = Listener()  # BEACON_SECRET=HEX_SECRET; it has read it
        self.addCleanup(listener.stop)
        env = self.environ_of(listener.proc.pid)
        self.assertIn(b"BEACON_SECRET=\0", env)  # the name, its value gone
        self.assertNotIn(HEX_SECRET[4:].encode(), env)
        self.assertNotIn(HEX_SECRET[4:20].encode(), env)
        # and the key it was read into still verifies
        udp_send(listener.port, run(["sign", "--ts", "now"],
                                    secret=HEX_SECRET).stdout.rstrip("\n"))
        listener.expect(r"^accepted heartbeat ")


class ListenCountTest(CliTestCase):
    def test_count_exits_after_n_datagrams(self):
        listener = Listener("--count", "2")
        self.addCleanup(listener.stop)
        udp_send(listener.port, "not a beacon")
        udp_send(listener.port, "BEACON ts=1 mac=0000000000000000")
        self.assertEqual(listener.wait(), 0)
        listener.expect(r"^dropped bad frame from 127\.0\.0\.1:\d+: "
                        r'"not a beacon"$')
        listener.expect(r"^dropped mac mismatch from ")
        self.assertEqual(len(listener.seen), 3, listener.seen)


class SendTest(CliTestCase):
    def test_send_once_is_accepted(self):
        listener = Listener("--count", "1")
        self.addCleanup(listener.stop)
        r = run(["send", "--once", "--to", f"udp://127.0.0.1:{listener.port}",
                 "--url", "http://127.0.0.1:8080/", "--host", "web-2"],
                secret=HEX_SECRET)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        line = listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^accepted url=http://127\.0\.0\.1:8080 "
                               r"host=web-2 pid=\d+ seq=0 ts=\d+ "
                               r"from 127\.0\.0\.1:\d+ -> add$")
        self.assertEqual(listener.wait(), 0)

    def test_sigterm_sends_leaving_and_exits_0(self):
        listener = Listener()
        self.addCleanup(listener.stop)
        sender = Process(["send", "--interval", "0.2",
                          "--to", f"127.0.0.1:{listener.port}",
                          "--url", "http://127.0.0.1:8082"])
        self.addCleanup(sender.stop)
        # two regular announcements prove the interval loop runs
        listener.expect(r"^accepted url=http://127\.0\.0\.1:8082 .* seq=0 .*"
                        r"-> add$")
        line = listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^accepted .* seq=1 ts=\d+ from .* -> renew$")
        stopped = time.monotonic()
        sender.proc.send_signal(signal.SIGTERM)
        self.assertEqual(sender.wait(), 0, sender.stderr())
        took = time.monotonic() - stopped
        self.assertEqual(sender.stderr(), "")
        line = listener.expect(r"state=")
        self.assertRegex(line, r"^accepted url=http://127\.0\.0\.1:8082 "
                               r"host=\S+ pid=\d+ seq=\d+ ts=\d+ "
                               r"state=leaving from 127\.0\.0\.1:\d+ "
                               r"-> disable$")
        # every line before it was a regular, accepted announcement
        for earlier in listener.seen[1:-1]:  # after "listening on"
            self.assertRegex(earlier, r"^accepted url=.* -> (add|renew)$")
        # one lost datagram must not keep a departed backend in rotation:
        # three more within the first second, each a new announcement,
        # which a receiver takes as nothing new
        lines = [line] + [listener.expect(r"state=leaving") for _ in range(3)]
        for repeat in lines[1:]:
            self.assertRegex(repeat, r"^accepted .* state=leaving .* -> ignore$")
        ts = [int(re.search(r" ts=(\d+) ", x).group(1)) for x in lines]
        self.assertEqual(ts, sorted(set(ts)))
        self.assertLess(ts[-1] - ts[0], 1_500_000)
        self.assertLess(took, 3)

    def test_failing_target_is_reported_once_and_others_still_served(self):
        listener = Listener()
        self.addCleanup(listener.stop)
        # A send error without DNS and without traffic: the kernel refuses
        # a datagram to the broadcast address from a socket without
        # SO_BROADCAST (EACCES; ENETUNREACH without a route) before any
        # packet exists. All that is sent goes to 127.0.0.1.
        sender = Process(["send", "--interval", "0.2",
                          "--to", "255.255.255.255:9",
                          "--to", f"127.0.0.1:{listener.port}",
                          "--url", "http://127.0.0.1:8083"])
        self.addCleanup(sender.stop)
        for seq in range(4):
            listener.expect(rf"^accepted url=http://127\.0\.0\.1:8083 .* "
                            rf"seq={seq} ")
        sender.proc.send_signal(signal.SIGTERM)
        self.assertEqual(sender.wait(), 0)
        err = sender.stderr().splitlines()
        self.assertEqual(len(err), 1, err)
        self.assertRegex(err[0], r"^beaconctl: send: to 255\.255\.255\.255:9: "
                                 r"cannot send to 255\.255\.255\.255:9: .* "
                                 r"\(retrying; reported once a minute at most\)$")

    def test_service_is_sent(self):
        listener = Listener("--count", "1", "--service", "shop")
        self.addCleanup(listener.stop)
        r = run(["send", "--once", "--to", f"127.0.0.1:{listener.port}",
                 "--url", "http://127.0.0.1:8089", "--host", "web-3",
                 "--service", "shop"], secret=HEX_SECRET)
        self.assertEqual(r.returncode, 0, r.stderr)
        line = listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^accepted url=http://127\.0\.0\.1:8089 "
                               r"host=web-3 pid=\d+ seq=0 ts=\d+ svc=shop "
                               r"from 127\.0\.0\.1:\d+ -> add$")
        self.assertEqual(listener.wait(), 0)

    def test_route_and_lbfactor_are_sent_in_every_datagram(self):
        listener = Listener()
        self.addCleanup(listener.stop)
        sender = Process(["send", "--interval", "0.2",
                          "--to", f"127.0.0.1:{listener.port}",
                          "--url", "http://127.0.0.1:8092", "--host", "web-4",
                          "--route", "web4", "--lbfactor", "3.25"])
        self.addCleanup(sender.stop)
        line = listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(line, r"^accepted url=http://127\.0\.0\.1:8092 "
                               r"host=web-4 pid=\d+ seq=0 ts=\d+ route=web4 "
                               r"lbfactor=3\.25 from 127\.0\.0\.1:\d+ -> add$")
        sender.proc.send_signal(signal.SIGTERM)
        self.assertEqual(sender.wait(), 0, sender.stderr())
        line = listener.expect(r"state=")
        self.assertRegex(line, r"^accepted url=http://127\.0\.0\.1:8092 .* "
                               r"route=web4 lbfactor=3\.25 state=leaving "
                               r"from 127\.0\.0\.1:\d+ -> disable$")

    def test_state_and_ctx_are_sent_in_every_datagram_then_leaving(self):
        listener = Listener()
        self.addCleanup(listener.stop)
        sender = Process(["send", "--interval", "0.2",
                          "--to", f"127.0.0.1:{listener.port}",
                          "--url", "http://127.0.0.1:8093", "--host", "web-5",
                          "--ctx", "/shop", "--state", "standby"])
        self.addCleanup(sender.stop)
        for action in ("add", "renew"):
            line = listener.expect(r"^(accepted|dropped) ")
            self.assertRegex(line, r"^accepted url=http://127\.0\.0\.1:8093 "
                                   r"host=web-5 pid=\d+ seq=\d+ ts=\d+ "
                                   r"ctx=/shop state=standby "
                                   rf"from 127\.0\.0\.1:\d+ -> {action}$")
        sender.proc.send_signal(signal.SIGTERM)
        self.assertEqual(sender.wait(), 0, sender.stderr())
        line = listener.expect(r"state=leaving")
        self.assertRegex(line, r" ctx=/shop state=leaving from .* -> disable$")

    def test_send_refuses_state_leaving_and_unknown_states(self):
        for bad, problem in (("leaving", "says leaving itself"),
                             ("paused", "draining or standby")):
            with self.subTest(state=bad):
                self.assert_one_line_error(
                    run(["send", "--once", "--to", "127.0.0.1:9", "--url",
                         "http://127.0.0.1:8080", "--state", bad],
                        secret=HEX_SECRET),
                    must_contain=["--state", problem])

    def test_once_to_no_reachable_target_exits_1(self):
        r = run(["send", "--once", "--to", "255.255.255.255:9",
                 "--url", "http://127.0.0.1:8084"], secret=HEX_SECRET)
        self.assert_one_line_error(r, status=1,
                                   must_contain=["255.255.255.255:9"])


class ErrorTest(CliTestCase):
    """Usage and configuration errors: one line on stderr, exit 2."""

    def test_missing_secret(self):
        for args in (["send", "--once", "--to", "127.0.0.1:9"],
                     ["listen", "--bind", "127.0.0.1:0"],
                     ["sign", "--ts", "1"]):
            with self.subTest(args=args):
                self.assert_one_line_error(
                    run(args), must_contain=["--secret-file", "BEACON_SECRET"])

    def test_secret_on_the_command_line_is_refused_without_echoing_it(self):
        for args in (["sign", "--ts", "1", "--secret", HEX_SECRET],
                     ["sign", "--ts", "1", f"--secret={HEX_SECRET}"],
                     ["send", "--secret", HEX_SECRET, "--to", "127.0.0.1:9"]):
            with self.subTest(args=args):
                r = run(args, secret=HEX_SECRET)
                self.assert_one_line_error(r, must_contain=["--secret-file"])
                self.assertNotIn("00112233", r.stderr)

    def test_bad_secrets(self):
        short = self.secret_file("too short\n")
        r = run(["sign", "--ts", "1", "--secret-file", short])
        self.assert_one_line_error(r, must_contain=["16 bytes"])
        self.assertNotIn("too short", r.stderr)
        r = run(["sign", "--ts", "1", "--secret-file", "/nonexistent/secret"])
        self.assert_one_line_error(r, must_contain=["/nonexistent/secret"])
        self.assert_one_line_error(run(["sign", "--ts", "1"], secret="hex:12"),
                                   must_contain=["32 hex digits"])
        empty = self.secret_file("\n" + HEX_SECRET + "\n")  # first line only
        self.assert_one_line_error(run(["sign", "--ts", "1", "--secret-file",
                                        empty]), must_contain=["empty"])
        # a passphrase cut at a NUL byte would silently be another key
        nul = self.secret_file(PASSPHRASE[:10] + "\0" + PASSPHRASE[10:])
        self.assert_one_line_error(run(["sign", "--ts", "1", "--secret-file",
                                        nul]), must_contain=["NUL"])

    def test_bad_url_names_the_problem(self):
        for url, problem in (("http://a.example/path", "path"),
                             ("http://a.example:0", "port"),
                             ("http://user@a.example", "userinfo")):
            with self.subTest(url=url):
                r = run(["send", "--once", "--to", "127.0.0.1:9",
                         "--url", url], secret=HEX_SECRET)
                self.assert_one_line_error(r, must_contain=[url, problem])

    def test_bad_to(self):
        for to in ("127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536",
                   "::1:5555", "[::1]", "host:80x", "1x://host:5555", ":5555"):
            with self.subTest(to=to):
                r = run(["send", "--once", "--to", to], secret=HEX_SECRET)
                self.assert_one_line_error(r, must_contain=[f"'{to}'"])

    def test_good_to_forms_are_accepted(self):
        # A scheme is stripped and IPv6 goes in brackets. Without a secret
        # the run stops at the secret, after --to was read: nothing is sent.
        for to in ("udp://127.0.0.1:9", "tcp://127.0.0.1:9", "[::1]:9",
                   "udp://[::1]:5555", "localhost:65535"):
            with self.subTest(to=to):
                r = run(["send", "--once", "--to", to, "--url",
                         "http://127.0.0.1:8080"])
                self.assert_one_line_error(r, must_contain=["no secret"])

    def test_other_usage_errors(self):
        cases = [
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
            ["listen", "--bind", "127.0.0.1:0", "--service", "x",
             "--service", "y"],
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
        ]
        for args in cases:
            with self.subTest(args=args):
                self.assert_one_line_error(run(args, secret=HEX_SECRET))

    def test_interval_forms(self):
        # accepted forms reach the secret check (no secret given): exit 2
        # with the secret message, not an --interval complaint
        for value in ("5", "0.5", "500ms", "1.5s", ".25"):
            with self.subTest(value=value):
                r = run(["send", "--interval", value, "--to", "127.0.0.1:9"])
                self.assert_one_line_error(r, must_contain=["no secret"])


class SecretSourceTest(CliTestCase):
    """Where the secret comes from, as ProxyBeaconSecret says it: --secret-exec
    (or BEACON_SECRET=exec:...) runs a program and takes its first line,
    BEACON_SECRET=file:... reads a file, and any other WORD:/ is refused
    rather than signed with as a passphrase."""

    HEX = "hex:00112233445566778899aabbccddeeff"
    PRINT_IT = f"/bin/sh -c 'echo {HEX}; echo ignored'"

    def signed(self, args, secret=None):
        r = run(["sign", "--ts", "1"] + args, secret=secret)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return r.stdout

    def test_secret_exec_signs_with_the_first_line_the_program_prints(self):
        want = self.signed([], secret=self.HEX)
        self.assertEqual(self.signed(["--secret-exec", self.PRINT_IT]), want)
        self.assertEqual(self.signed([], secret="exec:" + self.PRINT_IT), want)
        self.assertEqual(self.signed([], secret="EXEC:" + self.PRINT_IT), want)

    def test_the_environment_may_name_a_file(self):
        path = self.secret_file(self.HEX + "\n")
        self.assertEqual(self.signed([], secret="File:" + path),
                         self.signed([], secret=self.HEX))

    def test_a_failing_program_is_a_configuration_error(self):
        r = run(["sign", "--ts", "1", "--secret-exec",
                 "/bin/sh -c 'echo leaky-secret-0123456789; exit 3'"])
        self.assert_one_line_error(r, must_contain=(
            "--secret-exec: exec: /bin/sh exited with status 3",))
        self.assertNotIn("leaky", r.stderr)

    def test_a_source_beaconctl_does_not_know_is_refused(self):
        for value in ("fiel:/etc/beacon.secret",
                      "https://vault.example/secret"):
            with self.subTest(value=value):
                r = run(["sign", "--ts", "1"], secret=value)
                self.assert_one_line_error(r, must_contain=(
                    "BEACON_SECRET: only file:/path and exec:/path [args]",))
                self.assertNotIn(value, r.stderr)

    def test_env_is_refused_with_the_hint_to_give_the_secret_itself(self):
        for value in ("env:SECRET", "ENV:/SECRET"):
            with self.subTest(value=value):
                r = run(["sign", "--ts", "1"], secret=value)
                self.assert_one_line_error(r, must_contain=(
                    "BEACON_SECRET: env: is no source",
                    "for beaconctl, the secret itself in BEACON_SECRET"))

    def test_one_secret_option_at_a_time(self):
        path = self.secret_file(self.HEX + "\n")
        for args in (["--secret-file", path, "--secret-exec", self.PRINT_IT],
                     ["--secret-exec", self.PRINT_IT] * 2):
            with self.subTest(args=args):
                r = run(["send", "--once", "--to", "127.0.0.1:9"] + args)
                self.assert_one_line_error(r, must_contain=(
                    "give one secret",))


class SecretFileTest(CliTestCase):
    """The secret-file rule, shared with ProxyBeaconSecret file:/path: the
    first line up to LF, one CR before the LF dropped, at most 4096 bytes,
    no NUL and no other CR. Each key is checked against one computed here:
    a passphrase's key is the first 16 bytes of its SHA-1, handed to
    beaconctl as hex: through BEACON_SECRET, so that the expected datagram
    depends on neither the file rule nor the passphrase hashing under
    test."""

    LIMIT = 4096

    @staticmethod
    def passphrase(n):
        """n printable bytes, no two prefixes alike: a key cut short by
        even one byte is another key."""
        chars = itertools.cycle("abcdefghijklmnopqrstuvwxyz0123456789-_")
        return "".join(next(chars) for _ in range(n - 8)) + f"{n:08d}"

    def file_of(self, content):
        """A secret file holding exactly these bytes."""
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        path = os.path.join(d.name, "secret")
        with open(path, "wb") as f:
            f.write(content.encode("ascii") if isinstance(content, str)
                    else content)
        return path

    def expected(self, passphrase):
        """`sign --ts 1` under the key of passphrase, computed here."""
        key = hashlib.sha1(passphrase.encode("ascii")).digest()[:16]
        r = run(["sign", "--ts", "1"], secret="hex:" + key.hex())
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def signed_with_file(self, path):
        r = run(["sign", "--ts", "1", "--secret-file", path])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertRegex(r.stdout, r"^BEACON ts=1 mac=[0-9a-f]{16}\n$")
        return r.stdout

    def refused(self, path, must_contain):
        r = run(["sign", "--ts", "1", "--secret-file", path])
        self.assert_one_line_error(r, must_contain=must_contain)
        return r.stderr

    def test_lines_up_to_the_limit_give_the_key_of_exactly_those_bytes(self):
        # 1023 and 1024: around where httpd once cut the line silently
        for n in (1023, 1024, self.LIMIT):
            for end in ("\n", "\r\n", ""):
                with self.subTest(length=n, end=repr(end)):
                    phrase = self.passphrase(n)
                    self.assertEqual(len(phrase), n)
                    path = self.file_of(phrase + end + "next line\n"
                                        if end else phrase)
                    self.assertEqual(self.signed_with_file(path),
                                     self.expected(phrase))

    def test_a_key_cut_by_one_byte_would_be_noticed(self):
        # the check above is only as good as this: another length, another key
        self.assertNotEqual(self.expected(self.passphrase(1024)),
                            self.expected(self.passphrase(1024)[:1023]))

    def test_a_line_over_the_limit_is_an_error_naming_the_limit(self):
        for end in ("\n", "\r\n", ""):
            with self.subTest(end=repr(end)):
                phrase = self.passphrase(self.LIMIT + 1)
                path = self.file_of(phrase + end)
                err = self.refused(path, ["--secret-file", path, "4096"])
                self.assertNotIn(phrase[:64], err)

    def test_crlf_line_end_gives_the_same_key_as_lf(self):
        phrase = self.passphrase(40)
        lf = self.signed_with_file(self.file_of(phrase + "\n"))
        crlf = self.signed_with_file(self.file_of(phrase + "\r\n"))
        self.assertEqual(crlf, lf)
        self.assertEqual(lf, self.expected(phrase))

    def test_a_cr_inside_the_line_is_an_error(self):
        # one tool would end the line at the CR and another not
        for content in ("first-half-of-it\rsecond-half-of-it\n",
                        "a-long-passphrase-then-cr\r\r\n",
                        "\ra-long-passphrase-after-cr\n"):
            with self.subTest(content=repr(content)):
                path = self.file_of(content)
                err = self.refused(path, ["--secret-file", path, "CR"])
                self.assertNotIn("half-of-it", err)
                self.assertNotIn("long-passphrase", err)

    def test_a_nul_is_an_error(self):
        for content in (b"a-long-passphrase\0and-more\n", b"\0" * 20,
                        b"hex:00112233445566778899aabbccddeeff\0\n"):
            with self.subTest(content=content):
                path = self.file_of(content)
                err = self.refused(path, ["--secret-file", path, "NUL"])
                self.assertNotIn("long-passphrase", err)

    def test_no_trailing_newline_is_fine(self):
        phrase = self.passphrase(100)
        self.assertEqual(self.signed_with_file(self.file_of(phrase)),
                         self.expected(phrase))
        self.assertEqual(self.signed_with_file(self.file_of(HEX_SECRET)),
                         self.signed_with_file(self.file_of(HEX_SECRET + "\n")))

    def test_only_the_first_line_counts(self):
        first, second = self.passphrase(30), self.passphrase(50)
        for rest in (second + "\n", second, "\n", "\r\n",
                     # what follows the first LF is never looked at
                     "x" * 10000 + "\r\0\n", "\0\r"):
            with self.subTest(rest=repr(rest[:20])):
                path = self.file_of(first + "\n" + rest)
                self.assertEqual(self.signed_with_file(path),
                                 self.expected(first))
        self.assertNotEqual(self.expected(first), self.expected(second))

    def test_an_unreadable_file_is_named_once(self):
        path = os.path.join(self.file_of("unused"), "not-a-directory")
        err = self.refused(path, ["--secret-file"])
        self.assertEqual(err.count(path), 1, err)


class HelpTest(CliTestCase):
    OPTIONS = {
        "send": ["--to", "--url", "--host", "--service", "--ctx", "--route",
                 "--lbfactor", "--interval", "--state", "--once", "--verbose",
                 "--secret-file", "--secret-exec", "--help"],
        "drain": ["--for", "--until-command", "--to", "--url", "--host",
                  "--service", "--ctx", "--route", "--lbfactor", "--interval",
                  "--verbose", "--secret-file", "--secret-exec", "--help"],
        "listen": ["--bind", "--max-skew", "--count", "--service", "--allow",
                   "--secret-file", "--secret-exec", "--help"],
        "sign": ["--url", "--host", "--pid", "--seq", "--ts", "--service",
                 "--ctx", "--route", "--lbfactor", "--state", "--secret-file",
                 "--secret-exec", "--help"],
        "keygen": ["--help"],
    }

    def test_every_option_is_documented(self):
        top = run(["--help"])
        self.assertEqual(top.returncode, 0)
        self.assertIn("BEACON_SECRET", top.stdout)
        for cmd, options in self.OPTIONS.items():
            r = run([cmd, "--help"])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")
            self.assertTrue(r.stdout.startswith(f"usage: beaconctl {cmd}"))
            self.assertIn(r.stdout, top.stdout)
            for opt in options:
                self.assertRegex(r.stdout, rf"\n  (-h, )?{opt}\b",
                                 f"{cmd} {opt}")
            for line in r.stdout.splitlines():
                self.assertLessEqual(len(line), 79, line)
            # and each documented option is accepted, nothing more
            documented = set(re.findall(r"\n  (?:-h, )?(--[a-z-]+)", r.stdout))
            self.assertEqual(documented, set(options))


if __name__ == "__main__":
    if not os.access(BEACONCTL, os.X_OK):
        sys.exit(f"test_beaconctl.py: no executable at {BEACONCTL}; "
                 f"set BEACONCTL")
    unittest.main()
