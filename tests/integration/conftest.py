# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Fixtures for the integration tests: private httpd instances and backends.

Every httpd a test starts is stopped at teardown, and its error log must
then hold no error/crit/alert/emerg line other than those whose tag the test
declared with httpd.expect_errors("BCN000nn", ...): as in httpd's own
test/conftest.py, a test passes only if the server stayed quiet too. Under
make check-asan-module (BEACON_SAN_LOG_DIR set), the sanitizer lines in
its logs are copied into that report directory, which fails the target.

Tests that need mod_proxy_beacon carry @pytest.mark.beacon (or use the
beacon_module fixture) and are skipped while the module is not built.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from backend import Backend
from httpd import Httpd, allow_cores, module_path, report_sanitizer_lines, set_subreaper


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "beacon: needs the built mod_proxy_beacon.so (skipped without it)")
    set_subreaper()
    allow_cores()


NOT_BUILT = ("mod_proxy_beacon.so is not built (looked in .libs/, src/.libs/, build/; "
             "set BEACON_MODULE=/path/to/mod_proxy_beacon.so)")


def pytest_runtest_setup(item):
    if item.get_closest_marker("beacon") and module_path() is None:
        pytest.skip(NOT_BUILT)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember each phase's report on the item, so fixtures can keep the
    files of a failed test for inspection."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


def _failed(request):
    rep = getattr(request.node, "rep_call", None)
    return rep is None or rep.failed or getattr(request.node, "keep_files", False)


@pytest.fixture
def beacon_module():
    """The module's path; skips the test while it is not built."""
    path = module_path()
    if path is None:
        pytest.skip(NOT_BUILT)
    return path


@pytest.fixture
def workdir(request):
    """A scratch directory, removed after a passing test, kept after a failure.

    0755, unlike mkdtemp's 0700: httpd's children run as www-data."""
    d = Path(tempfile.mkdtemp(prefix="beacon-it-"))
    d.chmod(0o755)
    yield d
    if _failed(request):
        print(f"\nkept test files in {d}")
    else:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def httpd_factory(request, workdir, backend_factory):
    """httpd_factory(**Httpd kwargs) -> Httpd, not yet started.

    Depends on backend_factory so that pytest tears it down later: servers
    stop while their backends are still up, and the shutdown logs nothing
    about members that vanished first.

    At teardown: stop every instance, then fail the test if an error log
    holds an unexpected error-level line (after the stop, so errors logged
    while shutting down count too)."""
    made = []

    def make(**kwargs):
        kwargs.setdefault("workdir", workdir / f"httpd{len(made)}")
        h = Httpd(**kwargs)
        made.append(h)
        return h

    yield make
    problems = []
    for h in made:
        try:
            h.stop()
        except AssertionError as e:
            problems.append(str(e))
    if os.environ.get("BEACON_SAN_LOG_DIR"):
        # make check-asan-module: the reports that reached a log, not the
        # report directory, go there too (the logs go with workdir)
        if report_sanitizer_lines(made, os.environ["BEACON_SAN_LOG_DIR"],
                                  request.node.nodeid):
            request.node.keep_files = True
    for h in made:
        bad = h.unexpected_errors()
        if bad:
            problems.append(f"unexpected errors in {h.error_log_path}:\n" + "\n".join(bad))
        problems.extend(h.crash_reports())
    if problems:
        request.node.keep_files = True
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def backend_factory(workdir):
    """backend_factory(name) -> a started Backend answering with `name`."""
    started = []

    def make(name, port=None):
        b = Backend(name, workdir, port)
        started.append(b)
        return b.start()

    yield make
    for b in started:
        b.stop()
