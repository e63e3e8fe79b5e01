# Licensed under the Apache License, Version 2.0; see LICENSE.
"""What beaconctl's tests (tests/cli/test_*.py) share: the binary, the
wire-format vectors it must print, running it, and a process whose output
lines a test waits for.

The binary comes from the environment variable BEACONCTL (ctest sets it),
else build/beaconctl. Everything talks over 127.0.0.1; every wait polls
for a condition with a deadline, and only the processes a test started are
signalled, through their own Popen objects.

Datagrams beaconctl sign refuses to write are signed with beacon_wire's
MAC (tests/integration/, put on sys.path by conftest.py): the one Python
copy of the wire format's rule, checked against every row of
tests/vectors/siphash24.txt by tests/integration/test_wire_vectors.py.
"""

import os
import queue
import re
import subprocess
import threading
import time

import beacon_wire as bw

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

now_usec = bw.now_usec


def sign_body(body, secret=HEX_SECRET):
    """body (the signed part, str) + " mac=" + its tag under secret, for
    datagrams beaconctl sign refuses to write."""
    return body + " mac=" + bw.tag_hex(bw.parse_key(secret), body.encode())


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
    """payload (str or bytes) to 127.0.0.1:port."""
    if isinstance(payload, str):
        payload = payload.encode()
    bw.send(payload, ("127.0.0.1", port))


def assert_one_line_error(r, status=2, must_contain=()):
    """A usage or configuration error: status, nothing on stdout, exactly
    one line on stderr, prefixed "beaconctl: "."""
    assert r.returncode == status, r.stderr
    assert r.stdout == ""
    assert r.stderr.endswith("\n"), repr(r.stderr)
    assert r.stderr.count("\n") == 1, repr(r.stderr)
    assert r.stderr.startswith("beaconctl: "), repr(r.stderr)
    for text in must_contain:
        assert text in r.stderr


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
