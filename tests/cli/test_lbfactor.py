# Licensed under the Apache License, Version 2.0; see LICENSE.
"""beaconctl send's load reporting, run for real against beaconctl listen on
loopback: --lbfactor-command CMD (run before each announcement, bounded in
time, its first line validated as --lbfactor is; a failure keeps the last
good value and is reported once) and --lbfactor-from loadavg.

Run by ctest (one entry per file), or directly:
    BEACONCTL=build/beaconctl /usr/bin/python3 -m pytest -q tests/cli/test_lbfactor.py
"""

import os
import re
import signal
import time

import pytest

from beaconctl import HEX_SECRET, TIMEOUT, assert_one_line_error, run

URL = "http://127.0.0.1:8096"
ANNOUNCEMENT = (r"^accepted url=http://127\.0\.0\.1:8096 host=web-7 pid=\d+ "
                r"seq=\d+ ts=\d+(?: lbfactor=(\S+))? from 127\.0\.0\.1:\d+ "
                r"-> (?:add|renew)$")
PREFIX = "beaconctl: send: --lbfactor-command: "


def factor_of(line):
    """The lbfactor an accepted announcement of URL says; None: none."""
    m = re.match(ANNOUNCEMENT, line)
    assert m, line
    return m.group(1)


def next_factors(listener, n):
    """The lbfactors of the next n announcements."""
    return [factor_of(listener.expect(r"^(accepted|dropped) "))
            for _ in range(n)]


def wait_for_factor(listener, value):
    """Reads announcements until one says lbfactor=value (bounded)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if factor_of(listener.expect(r"^(accepted|dropped) ")) == value:
            return
    raise AssertionError(f"no lbfactor={value} within {TIMEOUT} s")


class Script:
    """The shell script the command runs (sh FILE): rewritten whole, by a
    rename, so that no run reads half of it."""

    def __init__(self, path, body):
        self.path = str(path)
        self.set(body)

    def set(self, body):
        tmp = self.path + ".new"
        with open(tmp, "w") as f:
            f.write(body + "\n")
        os.replace(tmp, self.path)

    @property
    def command(self):
        return f"sh {self.path}"


@pytest.fixture
def sender(listen, spawn):
    """sender(*extra): a listener, and send announcing URL to it every
    0.2 s with extra options; both stopped when the test ends."""
    def start(*extra, interval="0.2"):
        listener = listen()
        process = spawn(["send", "--interval", interval,
                         "--to", f"127.0.0.1:{listener.port}", "--url", URL,
                         "--host", "web-7"] + list(extra))
        return listener, process
    return start


def stop(process):
    """SIGTERM, exit 0; its stderr lines."""
    process.proc.send_signal(signal.SIGTERM)
    assert process.wait() == 0, process.stderr()
    return process.stderr().splitlines()


def test_the_announced_factor_follows_the_commands_output(sender, tmp_path):
    script = Script(tmp_path / "load.sh", "echo 40")
    listener, process = sender("--lbfactor-command", script.command)
    assert next_factors(listener, 1) == ["40"]
    script.set("printf '12.75'")  # no newline: the whole output is the line
    wait_for_factor(listener, "12.75")
    script.set("printf '100\\r\\nsecond line ignored\\n'")
    wait_for_factor(listener, "100")
    script.set("echo 1")
    wait_for_factor(listener, "1")
    # more output than a pipe holds after the line: read and dropped, the
    # command is not stopped by a full pipe
    script.set("echo 61; head -c 300000 /dev/zero")
    wait_for_factor(listener, "61")
    assert stop(process) == []


@pytest.mark.parametrize("body,why", [
    ("exit 1", "exited with status 1"),
    ("true", "printed nothing"),
    ("echo", "printed nothing"),  # an empty first line
    ("echo garbage", "printed no load factor"),
    ("echo 0", "printed no load factor"),
    ("echo 101", "printed no load factor"),
    ("echo 2.505", "printed no load factor"),
    ("echo ' 50'", "printed no load factor"),
    ("echo 50; exit 3", "exited with status 3"),
])
def test_a_failing_command_keeps_the_last_value_reported_once(
        sender, tmp_path, body, why):
    script = Script(tmp_path / "load.sh", "echo 40")
    listener, process = sender("--lbfactor-command", script.command)
    wait_for_factor(listener, "40")
    script.set(body)
    # several intervals: the last good value stays in every datagram
    assert next_factors(listener, 6) == ["40"] * 6
    script.set("echo 55")
    wait_for_factor(listener, "55")
    err = stop(process)
    assert len(err) == 2, err
    assert err[0].startswith(PREFIX) and why in err[0], err
    assert err[0].endswith("; keeping lbfactor=40 until it succeeds"), err
    assert err[1] == PREFIX + "succeeds again: lbfactor=55", err
    assert "garbage" not in err[0]  # the output is not echoed


def test_before_a_good_value_no_lbfactor_is_sent(sender, tmp_path):
    script = Script(tmp_path / "load.sh", "exit 1")
    listener, process = sender("--lbfactor-command", script.command)
    assert next_factors(listener, 5) == [None] * 5
    script.set("echo 30")
    wait_for_factor(listener, "30")
    err = stop(process)
    assert err == [PREFIX + "the command exited with status 1; sending no "
                   "lbfactor "
                   "until it succeeds", PREFIX + "succeeds again: "
                   "lbfactor=30"], err


def test_a_command_past_its_bound_is_killed_with_its_group(sender, tmp_path):
    pids = tmp_path / "pids"
    script = Script(tmp_path / "load.sh",
                    f"sleep 60 & echo $! >> {pids}; echo $$ >> {pids}; wait")
    started = time.monotonic()
    # interval 0.2: the bound is half of it, 0.1 s (at least 0.1, at most
    # 2 s); the schedule holds, without a factor
    listener, process = sender("--lbfactor-command", script.command)
    assert next_factors(listener, 5) == [None] * 5
    assert time.monotonic() - started < 5
    err = stop(process)
    assert err == [PREFIX + "the command did not finish within 0.1 s; "
                   "sending no lbfactor until it succeeds"], err
    # the shell and its background child: none outlives its run
    deadline = time.monotonic() + TIMEOUT
    listed = [int(x) for x in pids.read_text().split()]
    assert len(listed) >= 2 * 4
    while time.monotonic() < deadline:
        alive = [p for p in listed if os.path.exists(f"/proc/{p}")
                 and not open(f"/proc/{p}/stat").read().rsplit(")", 1)[1]
                 .startswith(" Z")]
        if not alive:
            break
        time.sleep(0.02)
    assert not alive, alive


def test_the_bound_is_at_most_2_seconds(sender, tmp_path):
    script = Script(tmp_path / "load.sh", "exec sleep 60")
    listener, process = sender("--lbfactor-command", script.command,
                               interval="10")
    started = time.monotonic()
    assert next_factors(listener, 1) == [None]
    took = time.monotonic() - started
    assert 1.5 < took < 5, took
    assert stop(process) == [PREFIX + "the command did not finish within "
                             "2.0 s; sending no lbfactor until it succeeds"]


def test_once_runs_the_command_once(listen, tmp_path):
    listener = listen("--count", "1")
    script = Script(tmp_path / "load.sh", "echo 33.5")
    r = run(["send", "--once", "--to", f"127.0.0.1:{listener.port}",
             "--url", URL, "--host", "web-7", "--lbfactor-command",
             script.command], secret=HEX_SECRET)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert next_factors(listener, 1) == ["33.5"]


def test_loadavg_sends_a_valid_factor(listen):
    listener = listen("--count", "1")
    r = run(["send", "--once", "--to", f"127.0.0.1:{listener.port}",
             "--url", URL, "--host", "web-7", "--lbfactor-from", "loadavg"],
            secret=HEX_SECRET)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    [value] = next_factors(listener, 1)
    # the listener accepted it (lbfactor= checked); the mapping's range
    assert value is not None and re.fullmatch(r"\d+(\.\d\d?)?", value)
    assert 10 <= float(value) <= 100


@pytest.mark.parametrize("options,says", [
    (["--lbfactor", "5", "--lbfactor-command", "echo 5"],
     ["--lbfactor", "--lbfactor-command", "--lbfactor-from", "one"]),
    (["--lbfactor-from", "loadavg", "--lbfactor", "5"],
     ["--lbfactor", "--lbfactor-command", "--lbfactor-from", "one"]),
    (["--lbfactor-command", "echo 5", "--lbfactor-from", "loadavg"],
     ["--lbfactor", "--lbfactor-command", "--lbfactor-from", "one"]),
    (["--lbfactor-from", "cpu"], ["--lbfactor-from 'cpu'", "loadavg"]),
    (["--lbfactor-command", ""], ["--lbfactor-command", "empty"]),
    (["--lbfactor-command", "echo 5", "--lbfactor-command", "echo 6"],
     ["--lbfactor-command may be given only once"]),
])
def test_lbfactor_sources_are_usage_errors_together(options, says):
    assert_one_line_error(
        run(["send", "--once", "--to", "127.0.0.1:9", "--url", URL]
            + options, secret=HEX_SECRET),
        must_contain=says)


def test_drain_takes_no_load_source():
    r = run(["drain", "--for", "1", "--to", "127.0.0.1:9", "--url", URL,
             "--lbfactor-command", "echo 5"], secret=HEX_SECRET)
    assert r.returncode == 2 and "lbfactor-command" in r.stderr, r.stderr
