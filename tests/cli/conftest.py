# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Fixtures for beaconctl's tests (tests/cli/test_*.py), run by ctest with
Debian's pytest, one entry per file (CMakeLists.txt, "# beaconctl"):

    BEACONCTL=build/beaconctl /usr/bin/python3 -m pytest -q tests/cli/test_drain.py

Every file and process a test makes is removed or stopped when it ends.
"""

import os
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

# beacon_wire, the integration tests' Python sender, holds the one Python
# copy of the MAC (SipHash-2-4) and of the key rule: beaconctl's tests sign
# and verify with it rather than with a copy of their own.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
pytest.register_assert_rewrite("beaconctl")  # its asserts explain themselves

from beaconctl import BEACONCTL, Listener, Process  # noqa: E402


def pytest_configure(config):
    if not os.access(BEACONCTL, os.X_OK):
        raise pytest.UsageError(f"no executable beaconctl at {BEACONCTL}; "
                                f"set BEACONCTL")


@pytest.fixture
def secret_file(tmp_path):
    """A file holding exactly content (str, written as UTF-8, or bytes);
    returns its path."""
    count = iter(range(1 << 30))

    def make(content):
        path = tmp_path / f"secret-{next(count)}"
        path.write_bytes(content.encode("utf-8") if isinstance(content, str)
                         else content)
        return str(path)
    return make


@pytest.fixture
def stopped_at_end():
    """stopped_at_end(process): process, stopped (Process.stop) when the
    test ends, the last started first, as addCleanup did."""
    with ExitStack() as stack:
        def register(process):
            stack.callback(process.stop)
            return process
        yield register


@pytest.fixture
def listen(stopped_at_end):
    """Listener(*extra, secret=...): `beaconctl listen` on a free loopback
    port, stopped when the test ends."""
    return lambda *extra, **kwargs: stopped_at_end(Listener(*extra, **kwargs))


@pytest.fixture
def spawn(stopped_at_end):
    """Process(args, ...): a beaconctl process, stopped when the test ends."""
    return lambda *args, **kwargs: stopped_at_end(Process(*args, **kwargs))
