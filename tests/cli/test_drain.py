# Licensed under the Apache License, Version 2.0; see LICENSE.
"""beaconctl drain, run for real against beaconctl listen on loopback:
draining announcements until --for is up, --until-command exits 0 or a
stop signal, then leaving.

Run by ctest (one entry per file), or directly:
    BEACONCTL=build/beaconctl /usr/bin/python3 -m pytest -q tests/cli/test_drain.py
"""

import os
import re
import signal
import time

import pytest

from beaconctl import HEX_SECRET, TIMEOUT, assert_one_line_error, run

URL = "http://127.0.0.1:8095"
DRAINING = (r"^accepted url=http://127\.0\.0\.1:8095 host=web-9 pid=\d+ "
            r"seq=\d+ ts=\d+ svc=shop ctx=/shop,/cart route=web9 "
            r"state=draining from 127\.0\.0\.1:\d+ -> (add|renew)$")
LEAVING = (r"^accepted url=http://127\.0\.0\.1:8095 host=web-9 .* route=web9 "
           r"state=leaving from 127\.0\.0\.1:\d+ -> disable$")


@pytest.fixture
def drain(listen, spawn):
    """drain(*extra): a listener, and drain announcing URL to it every
    0.2 s; both stopped when the test ends."""
    def start(*extra):
        listener = listen()
        drainer = spawn(["drain", "--interval", "0.2",
                         "--to", f"127.0.0.1:{listener.port}", "--url", URL,
                         "--host", "web-9", "--service", "shop",
                         "--ctx", "/shop,/cart", "--route", "web9"]
                        + list(extra))
        return listener, drainer
    return start


def assert_drained_then_left(listener, at_least=2):
    """Draining announcements (the first adds), then one leaving."""
    first = listener.expect(r"^(accepted|dropped) ")
    assert re.search(DRAINING, first)
    assert first.endswith("-> add"), first
    for _ in range(at_least - 1):
        assert re.search(DRAINING, listener.expect(r"^(accepted|dropped) "))
    listener.expect(r"state=leaving")
    assert re.search(LEAVING, listener.seen[-1])
    for line in listener.seen[1:-1]:  # after "listening on"
        assert re.search(DRAINING, line)


def ended(drainer):
    """drain's exit status, which must be 0, and its stderr lines (read
    once: the pipe gives them only once)."""
    rc = drainer.wait(TIMEOUT)
    err = drainer.stderr().splitlines()
    assert rc == 0, err
    assert err, "drain says how it ended"
    return err


def test_drains_for_the_time_given_then_says_leaving(drain):
    start = time.monotonic()
    listener, drainer = drain("--for", "0.7")
    err = ended(drainer)
    assert time.monotonic() - start >= 0.7
    assert_drained_then_left(listener, at_least=3)
    assert re.search(r"^beaconctl: drain: drained for \S+ s: --for is up; "
                     r"said leaving$", err[-1])


def test_until_command_exiting_0_ends_the_drain_early(drain, tmp_path):
    done = os.path.join(tmp_path, "sessions-gone")
    # --for 60: only the command can end it within the test's bound
    listener, drainer = drain("--for", "60",
                              "--until-command", f"test -e '{done}'")
    for _ in range(3):
        assert re.search(DRAINING, listener.expect(r"^(accepted|dropped) "))
    assert drainer.proc.poll() is None, "still draining"
    open(done, "w").close()
    err = ended(drainer)
    listener.expect(r"state=leaving")
    assert re.search(LEAVING, listener.seen[-1])
    assert re.search(r"^beaconctl: drain: drained for \S+ s: "
                     r"--until-command exited 0; said leaving$", err[-1])
    # the failing runs before were warned about once
    assert sum("--until-command exited 1" in e for e in err) == 1, err


def test_a_stop_signal_ends_the_drain_with_leaving(drain):
    listener, drainer = drain("--for", "60")
    for _ in range(2):
        assert re.search(DRAINING, listener.expect(r"^(accepted|dropped) "))
    drainer.proc.send_signal(signal.SIGTERM)
    err = ended(drainer)
    listener.expect(r"state=leaving")
    assert re.search(LEAVING, listener.seen[-1])
    assert re.search(r": stopped by a signal; said leaving$", err[-1])


def test_a_command_still_running_at_the_end_is_stopped(drain):
    start = time.monotonic()
    listener, drainer = drain("--for", "0.5",
                              "--until-command", "exec sleep 60")
    err = ended(drainer)
    assert time.monotonic() - start < TIMEOUT
    listener.expect(r"state=leaving")
    assert re.search(r": --for is up; ", err[-1])


@pytest.mark.parametrize("args,problem", [
    (["--to", "127.0.0.1:9"], "--for DURATION is required"),
    (["--for", "soon", "--to", "127.0.0.1:9"], "--for 'soon'"),
    (["--for", "0", "--to", "127.0.0.1:9"], "--for '0'"),
    (["--for", "5"], "--to HOST:PORT is required"),
    (["--for", "5", "--to", "127.0.0.1:9", "--once"], "--once"),
    (["--for", "5", "--to", "127.0.0.1:9", "--state", "standby"], "--state"),
    (["--for", "5", "--to", "127.0.0.1:9", "--ctx", "/a/"], "--ctx"),
])
def test_usage_errors(args, problem):
    assert_one_line_error(run(["drain"] + args, secret=HEX_SECRET),
                          must_contain=[problem])
