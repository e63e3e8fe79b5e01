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
def listen():
    """Listener(*extra, secret=...): `beaconctl listen` on a free loopback
    port, stopped when the test ends."""
    with ExitStack() as stack:
        def make(*extra, **kwargs):
            listener = Listener(*extra, **kwargs)
            stack.callback(listener.stop)
            return listener
        yield make


@pytest.fixture
def spawn():
    """Process(args, ...): a beaconctl process, stopped when the test ends."""
    with ExitStack() as stack:
        def make(*args, **kwargs):
            process = Process(*args, **kwargs)
            stack.callback(process.stop)
            return process
        yield make
