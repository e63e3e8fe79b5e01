# Licensed under the Apache License, Version 2.0; see LICENSE.
"""`make demo` (demo/beacon-demo.py), run as the user would, non-interactively.

The demo stands alone (it imports nothing from here); these tests only run
it, bounded, and check what it reports in its final JSON line against what
is left on the machine: members joined, one left rotation and returned,
every backend served requests, and no process it started survives, also
when it fails or is told to stop.
"""

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from httpd import REPO, error_lines, module_path, wait_for

pytestmark = pytest.mark.beacon

DEMO = REPO / "demo" / "beacon-demo.py"
PYTHON = "/usr/bin/python3"
RUN_TIMEOUT = 180   # the scripted run takes about 30 s; a loaded machine more


def demo_cmd(*args):
    return [PYTHON, str(DEMO), "--scripted", "--module", module_path(), *args]


def summary_of(stdout):
    """The final JSON line."""
    last = [line for line in stdout.splitlines() if line.strip()][-1]
    return json.loads(last)


def processes_naming(workdir):
    """Live pids whose command line names workdir (apache2 -f <workdir>/...)."""
    mark = workdir.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if mark in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def assert_nothing_left(summary):
    workdir = summary["workdir"]
    assert workdir and "beacon-demo-" in workdir
    assert summary["leftover_pids"] == []
    assert processes_naming(workdir) == [], "apache2 processes of the demo survive it"
    for pid in summary["pids"]:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # gone
        assert workdir.encode() not in cmdline, f"pid {pid} of the demo is still running"


def test_the_scripted_demo_shows_join_leave_and_return(tmp_path):
    r = subprocess.run(demo_cmd("--keep"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=RUN_TIMEOUT)
    assert r.returncode == 0, f"demo exited {r.returncode}:\n{r.stdout[-4000:]}\n{r.stderr}"
    s = summary_of(r.stdout)
    workdir = Path(s["workdir"])
    try:
        assert s["ok"] and s["error"] is None and s["problems"] == []
        backends = s["backends"]
        assert len(backends) == 3
        assert sorted(s["members_joined"]) == sorted(backends.values())

        left, back = s["left"], s["returned"]
        assert left["backend"] == back["backend"] == "backend 2"
        assert left["url"] == back["url"] == backends["backend 2"]
        assert left["requests_while_away"] == 0
        assert left["client_requests_while_away"] > 0, "others served while it was away"
        assert back["requests_after_return"] >= 10

        assert set(s["requests"]) == set(backends)
        assert all(n > 0 for n in s["requests"].values()), s["requests"]
        # A request in flight when a backend stops may fail; no more than that.
        assert sum(s["client"]["errors"].values()) <= 3, s["client"]

        # It left because it said so (state=leaving), not by the timeout.
        proxy_log = (workdir / "proxy" / "logs" / "error.log").read_text(encoding="latin-1")
        assert f"BCN00036: backend leaving {left['url']}" in proxy_log
        assert f"evicted backend {left['url']}" not in proxy_log
        assert f"re-enabled backend {left['url']}" in proxy_log
        for log in sorted(workdir.glob("*/logs/error.log")):
            assert error_lines(log.read_text(encoding="latin-1")) == [], log

        # The output: snapshots (stdout is no TTY) naming each phase.
        for phase in ("3 backends starting", "stopping backend 2", "backend 2 restarted",
                      "finished: stopping every process"):
            assert f"phase:   {phase}" in r.stdout
        assert "disabled (left)" in r.stdout
        assert "\x1b[" not in r.stdout, "no cursor control when stdout is not a TTY"
        assert_nothing_left(s)
        assert s["duration_s"] < 90
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_on_sigterm_the_demo_stops_everything_and_cleans_up(tmp_path):
    out = tmp_path / "demo.out"
    with open(out, "w") as f:
        proc = subprocess.Popen(demo_cmd(), stdout=f, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "backend 1 joined" in out.read_text() or proc.poll() is not None,
                 60, "the demo's first member to join")
        assert proc.poll() is None, out.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    s = summary_of(out.read_text())
    assert not s["ok"] and s["error"] == "interrupted by SIGTERM"
    assert s["pids"], "it had started processes"
    assert_nothing_left(s)
    assert not s["workdir_kept"] and not os.path.exists(s["workdir"])


def test_a_failing_demo_stops_everything_and_keeps_its_files():
    # --timeout 4 cannot be met: the run fails part-way through.
    r = subprocess.run(demo_cmd("--timeout", "4"), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=RUN_TIMEOUT)
    s = summary_of(r.stdout)
    try:
        assert r.returncode == 1
        assert not s["ok"] and "exceeded --timeout 4" in s["error"]
        assert s["workdir_kept"] and os.path.isdir(s["workdir"])
        assert f"kept configs and logs in {s['workdir']}" in r.stderr
        assert (Path(s["workdir"]) / "proxy" / "conf" / "httpd.conf").is_file()
        assert_nothing_left(s)
    finally:
        if s.get("workdir"):
            shutil.rmtree(s["workdir"], ignore_errors=True)
