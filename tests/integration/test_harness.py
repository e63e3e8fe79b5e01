# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The harness proving itself on stock apache2, without mod_proxy_beacon.

The module tests lean on these helpers to read and steer the balancer, so
each helper is shown to work against the real server first: a module test
that fails should mean the module is wrong, not the harness.
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import httpd as H
import private_hosts


def plain(httpd_factory, **kwargs):
    """An Httpd that never loads our module, whether or not it is built."""
    return httpd_factory(module=None, **kwargs)


def answer_from_each(h, names, timeout=10):
    """GET / until every backend in names has answered; returns who answered."""
    seen = set()

    def all_seen():
        status, body = h.get("/")
        assert status == 200, f"proxy answered {status}: {body[:200]}"
        seen.add(body)
        return seen >= set(names)

    H.wait_for(all_seen, timeout, f"answers from all of {sorted(names)}, seen {seen}")
    return seen


def test_generated_config_loads_modules_in_the_documented_order(httpd_factory):
    h = plain(httpd_factory, status=True)
    text = h.config_text()
    order = ["mpm_event", "authz_core", "authz_host", "slotmem_shm", "proxy_module",
             "proxy_http", "proxy_balancer", "lbmethod_byrequests", "status"]
    positions = [text.index(f"LoadModule {m}") for m in order]
    assert positions == sorted(positions)
    assert text.index("ProxyPass /balancer-manager !") < text.index("ProxyPass / balancer://")
    assert h.check_config() == (0, "Syntax OK\n")


def test_check_config_reports_a_bad_directive(httpd_factory):
    h = plain(httpd_factory, extra_config="NoSuchDirective on")
    rc, out = h.check_config()
    assert rc != 0
    assert "Invalid command 'NoSuchDirective'" in out


def test_empty_balancer_lists_no_member_and_logs_the_expected_error(httpd_factory):
    h = plain(httpd_factory).start()
    h.expect_errors("AH01171")  # "No workers in balancer", once per request
    assert h.balancer_members() == []
    assert h.get("/x")[0] == 503
    h.wait_log(r"AH01171: balancer://cluster: No workers")
    assert h.get("/y")[0] == 503
    h.wait_log(r"AH01171:")  # the cursor moved: this is the second line
    assert h.error_log().count("AH01171") == 2
    assert h.unexpected_errors() == []


@pytest.mark.parametrize("mpm", ["event", "prefork"])
def test_static_members_are_listed_and_both_answer(httpd_factory, backend_factory, mpm):
    a, b = backend_factory("alpha"), backend_factory("beta")
    h = plain(httpd_factory, mpm=mpm, members=[a.url, b.url]).start()
    members = h.balancer_members()
    assert [(w["name"], w["status"]) for w in members] == [(a.url, "Init Ok"),
                                                            (b.url, "Init Ok")]
    answer_from_each(h, {"alpha", "beta"})
    assert sum(w["elected"] for w in h.balancer_members()) >= 2
    # httpd logs a request after sending its response: poll, do not read once.
    H.wait_for(lambda: {r["worker"] for r in h.access_log() if r["path"] == "/"}
               == {a.url, b.url}, 5, "both workers in the access log")


@pytest.mark.parametrize("letter, word", [("D", "Dis"), ("S", "Stop")])
def test_operator_flag_takes_a_member_out_of_rotation(httpd_factory, backend_factory,
                                                      letter, word):
    a, b = backend_factory("alpha"), backend_factory("beta")
    h = plain(httpd_factory, members=[a.url, b.url]).start()
    answer_from_each(h, {"alpha", "beta"})

    after = h.set_worker_status("cluster", a.url, **{letter: 1})
    assert after["status"] == f"Init {word}"
    assert h.worker(a.url)["status"] == f"Init {word}"
    assert h.worker(b.url)["status"] == "Init Ok"
    served_by_a = len(a.requests())
    assert {h.get("/")[1] for _ in range(10)} == {"beta"}
    assert len(a.requests()) == served_by_a

    assert h.set_worker_status("balancer://cluster", a.url, **{letter: 0})["status"] == "Init Ok"
    answer_from_each(h, {"alpha"})


def test_set_worker_status_keeps_flags_it_was_not_given(httpd_factory, backend_factory):
    a = backend_factory("alpha")
    h = plain(httpd_factory, members=[a.url]).start()
    h.set_worker_status("cluster", a.url, D=1)
    assert h.set_worker_status("cluster", a.url, N=1)["flags"] == {"Init", "Dis", "Drn"}


def test_stop_leaves_no_process_of_the_instance(httpd_factory):
    h = plain(httpd_factory).start()
    pids = [h.pid] + h.child_pids()
    assert len(pids) > 1, "event MPM should have forked children"
    h.stop()
    assert all(H.pid_gone(p) for p in pids)
    assert not h.pid_path.exists()
    assert not h._answers_http()


def test_graceful_restart_replaces_the_children(httpd_factory, backend_factory):
    a = backend_factory("alpha")
    h = plain(httpd_factory, members=[a.url]).start()
    old = set(h.child_pids())
    h.graceful()
    H.wait_for(lambda: set(h.child_pids()) - old, 10, "a child of the new generation")
    assert h.get("/")[1] == "alpha"


def test_a_crashing_child_fails_the_clean_log_check(httpd_factory):
    h = plain(httpd_factory).start()
    victim = h.child_pids()[0]
    # SIGSEGV, as a module bug would raise. (SIGKILL would not do: httpd
    # logs no line for a child killed by KILL, TERM, HUP or USR1.)
    os.kill(victim, signal.SIGSEGV)
    h.wait_log(rf"AH0005[12]: child pid {victim} exit signal Segmentation fault")
    assert any(f"child pid {victim}" in line for line in h.unexpected_errors())
    h.expect_errors("AH00051", "AH00052")  # deliberate here only
    # CoreDumpDirectory makes the www-data child dumpable again: its core
    # is there, and the teardown's report gives its threads' stacks
    H.wait_for(lambda: list(h.core_dir.glob("core*")), 20, "the child's core")
    [report] = h.crash_reports()
    assert "core" in report and re.search(r"#\d+ +0x[0-9a-f]+ in ", report), report[-2000:]
    for core in h.core_dir.glob("core*"):
        core.unlink()  # deliberate here only


def test_the_launcher_prefix_runs_the_whole_server(httpd_factory):
    h = plain(httpd_factory)
    h.launcher = ["env", "BEACON_LAUNCHED=yes"]
    h.start()
    for pid in [h.pid] + h.child_pids():
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"BEACON_LAUNCHED=yes" in environ, pid


def test_a_private_hosts_file_is_seen_by_the_launched_process_only(tmp_path):
    why = private_hosts.usable()
    if why:
        pytest.skip(why)
    hosts = private_hosts.HostsFile(tmp_path / "hosts",
                                    {"tier.test": ["127.0.0.2", "127.0.0.3", "::1"]})
    inode = hosts.path.stat().st_ino
    assert sorted(hosts.resolve("tier.test")) == ["127.0.0.2", "127.0.0.3", "::1"]
    hosts.set({"tier.test": ["127.0.0.4"], "other.test": ["127.0.0.5"]})
    assert hosts.path.stat().st_ino == inode, "rewritten in place, not replaced"
    assert hosts.resolve("tier.test") == ["127.0.0.4"]
    assert hosts.resolve("other.test") == ["127.0.0.5"]
    outside = subprocess.run(["getent", "ahosts", "tier.test"], capture_output=True,
                             timeout=30)
    assert outside.returncode != 0 and outside.stdout == b""


def test_fail_to_start_reports_a_port_in_use(httpd_factory, backend_factory):
    busy = backend_factory("squatter")
    h = plain(httpd_factory, port=busy.port)
    rc, out = h.fail_to_start()
    assert rc != 0
    # Startup errors go to stderr, before the ErrorLog opens: the output has
    # them and the error log stays empty.
    assert "AH00072: make_sock: could not bind" in out
    assert h.error_log() == ""


def test_error_lines_flag_errors_and_crashes_but_not_expected_tags():
    log = "\n".join([
        "[Mon Nov 30 10:16:12.5 2026] [proxy_balancer:error] [pid 1:tid 2] "
        "[client 127.0.0.1:3] AH01171: balancer://cluster: No workers in balancer",
        "[Mon Nov 30 10:16:12.6 2026] [proxy_beacon:crit] [pid 1:tid 2] BCN00012: boom",
        "[Mon Nov 30 10:16:12.7 2026] [proxy_beacon:warn] [pid 1:tid 2] BCN00013: meh",
        "[Mon Nov 30 10:16:12.8 2026] [core:emerg] [pid 1:tid 2] untagged disaster",
        "[Mon Nov 30 10:16:12.9 2026] [core:notice] [pid 1:tid 1] AH00052: child pid 7 "
        "exit signal Segmentation fault (11)",
        # httpd's own race at a stop that is not graceful: not counted...
        "[Mon Nov 30 13:43:15.6 2026] [mpm_event:error] [pid 1:tid 3] (9)Bad file "
        "descriptor: AH03092: process_lingering_close: apr_pollset_add failure",
        # ...but the same tag for any other cause is
        "[Mon Nov 30 13:43:15.7 2026] [mpm_event:error] [pid 1:tid 3] (12)Cannot "
        "allocate memory: AH03092: process_lingering_close: apr_pollset_add failure",
    ])
    assert len(H.error_lines(log)) == 5
    unexpected = H.error_lines(log, {"AH01171", "BCN00012"})
    assert [line.split("] ")[-1] for line in unexpected] == [
        "untagged disaster", "AH00052: child pid 7 exit signal Segmentation fault (11)",
        "(12)Cannot allocate memory: AH03092: process_lingering_close: "
        "apr_pollset_add failure"]


def test_logged_at_reads_the_server_clock_of_the_matched_line():
    log = ("[Mon Nov 30 13:43:15.606798 2026] [mpm_event:notice] [pid 1:tid 1] AH00489: up\n"
           "[Mon Nov 30 13:43:27.106798 2026] [proxy_beacon:info] [pid 2:tid 3] "
           "BCN00035: evicted backend http://127.0.0.1:1\n")
    up, evicted = re.search("AH00489", log), re.search("evicted backend", log)
    assert H.logged_at(evicted) - H.logged_at(up) == pytest.approx(11.5)
    assert time.localtime(H.logged_at(up))[:6] == (2026, 11, 30, 13, 43, 15)


def test_module_path_prefers_the_environment(monkeypatch, tmp_path):
    so = tmp_path / "mod_proxy_beacon.so"
    monkeypatch.setenv("BEACON_MODULE", str(so))
    assert H.module_path() == str(so)


# Lines the sanitizers write where their log_path does not reach (UBSan's
# runtime error in httpd's error log, through the parent's stderr), planted
# among ordinary ones.
PLANTED_SANITIZER_LINES = [
    "src/mod_proxy_beacon_registry.c:95:9: runtime error: load of misaligned "
    "address 0x7f3a for type 'const apr_size_t', which requires 8 byte alignment",
    "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020",
    "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior src/x.c:48:9 in",
    "==4243==ERROR: LeakSanitizer: detected memory leaks",
]


def test_sanitizer_lines_find_each_planted_report_line_and_nothing_else():
    ordinary = ["[Mon Nov 30 13:43:15.606798 2026] [mpm_event:notice] [pid 1] "
                "AH00489: Apache/2.4.62 configured -- resuming normal operations",
                "[Mon Nov 30 13:43:15.7 2026] [proxy_beacon:info] [pid 2] "
                "BCN00010: http://127.0.0.1:1 joined balancer://cluster"]
    text = "\n".join([ordinary[0]] + PLANTED_SANITIZER_LINES + [ordinary[1]])
    assert H.sanitizer_lines(text) == PLANTED_SANITIZER_LINES
    assert H.sanitizer_lines("\n".join(ordinary)) == []


def test_a_sanitizer_line_in_an_instance_log_becomes_a_report_file(tmp_path):
    """check-asan-module fails on any file in its report directory: a line
    planted in an instance's error log (or its start or apache2 -t output)
    must land there, and a clean instance must leave nothing. (Not from
    httpd_factory, whose teardown would report the planted lines for real
    under check-asan-module.)"""
    clean, dirty = (H.Httpd(workdir=tmp_path / n, module=None) for n in ("clean", "dirty"))
    clean.error_log_path.write_text("[notice] nothing to see\n")
    dirty.error_log_path.write_text("[notice] before\n" + PLANTED_SANITIZER_LINES[0] + "\n")
    (dirty.dir / "logs" / "start.out").write_text(PLANTED_SANITIZER_LINES[1] + "\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    assert H.report_sanitizer_lines([clean], reports, "t::clean") == []
    assert list(reports.iterdir()) == []
    [path] = H.report_sanitizer_lines([clean, dirty], reports, "t::dirty[x]")
    text = path.read_text()
    assert path.parent == reports and "/" not in path.name[len("errorlog."):]
    assert str(dirty.error_log_path) in text and PLANTED_SANITIZER_LINES[0] in text
    assert "start.out" in text and PLANTED_SANITIZER_LINES[1] in text
    assert "t::dirty[x]" in text and "before" not in text


def test_only_httpds_close_race_passes_for_a_crash():
    race = ("#0  0x00007fb1026dd180 in apr_os_sock_get () from /lib/x86_64-linux-gnu/libapr-1.so.0\n"
            "#1  0x00007fb10241c06c in ?? () from /usr/lib/apache2/modules/mod_mpm_event.so\n"
            "#2  0x000055aafce63850 in ap_run_mpm ()\n")
    ours = race.replace("#2 ", "#2  0x1 in beacon_members_handle () from "
                        "/usr/lib/apache2/modules/mod_proxy_beacon.so\n#3 ")
    elsewhere = ("#0  0x00007fb1026dd180 in apr_os_sock_get () from /lib/x86_64-linux-gnu/libapr-1.so.0\n"
                 "#1  0x00007fb10241c06c in ?? () from /usr/lib/apache2/modules/mod_proxy_beacon.so\n")
    assert H.is_httpd_close_race(race)
    assert not H.is_httpd_close_race(ours)
    assert not H.is_httpd_close_race(elsewhere)
    assert not H.is_httpd_close_race("(no backtrace: gdb not found)")


def test_the_close_race_is_known_when_gdb_shows_another_thread_first():
    """gdb's current thread can be one that merely sleeps; the faulting
    thread is the one with httpd's fatal-signal handler frame (as a core
    of CI's run at 8daba31 showed it)."""
    current = ("#0  0x00007f5ae81669ec in __GI___select (nfds=0) at select.c:69\n"
               "#1  0x00007f5ae8278312 in apr_sleep () from /lib/x86_64-linux-gnu/libapr-1.so.0\n")
    faulting = ("Thread 3 (Thread 0x7f5ae7ff2780 (LWP 26509)):\n"
                "#0  0x00007f5ae80a4267 in __GI_kill () at syscall-template.S:120\n"
                "#1  <signal handler called>\n"
                "#2  0x00007f5ae8272180 in apr_os_sock_get () from /lib/x86_64-linux-gnu/libapr-1.so.0\n"
                "#3  0x00007f5ae7fb106c in ?? () from /usr/lib/apache2/modules/mod_mpm_event.so\n"
                "#4  0x000055f000307850 in ap_run_mpm ()\n")
    sleeping = "Thread 1 (Thread 0x7f5ae7bd36c0 (LWP 26512)):\n" + current
    every = "\n".join([sleeping, faulting, sleeping.replace("Thread 1 ", "Thread 2 ")])
    assert H.is_httpd_close_race(current, every)
    ours = faulting.replace("#4 ", "#4  0x1 in beacon_members_handle () from "
                            "/usr/lib/apache2/modules/mod_proxy_beacon.so\n#5 ")
    assert not H.is_httpd_close_race(current, "\n".join([sleeping, ours]))
    elsewhere = faulting.replace("apr_os_sock_get", "beacon_worker_find")
    assert not H.is_httpd_close_race(current, "\n".join([sleeping, elsewhere]))
    twice = "\n".join([faulting, faulting.replace("Thread 3 ", "Thread 4 ")])
    assert not H.is_httpd_close_race(current, twice)
    assert not H.is_httpd_close_race(current, sleeping)


def test_a_core_is_read_with_the_binary_a_wrapper_script_runs(tmp_path):
    """check-asan-module starts httpd through tools/asan-apache2, a shell
    script: gdb given the script reads a core with no symbol, and the
    close race went unrecognized (a CI run's teardown error)."""
    wrapper = Path(__file__).resolve().parents[2] / "tools" / "asan-apache2"
    assert H.binary_of(str(wrapper)) == os.environ.get("BEACON_APACHE2",
                                                       "/usr/sbin/apache2")
    assert H.binary_of("/usr/sbin/apache2") == "/usr/sbin/apache2"
    script = tmp_path / "apache2"
    script.write_text("#!/bin/sh\nexec /usr/sbin/apache2 \"$@\"\n")
    assert H.binary_of(str(script)) != str(script)
