# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The benchmarks' figure extraction (bench/extract.py) on output recorded
from a real run (fixtures/, from `run_bench.py --record DIR`): no httpd,
a few seconds. The header of fixtures/README says how to re-record."""

import sys
from pathlib import Path

import pytest

sys.dont_write_bytecode = True  # no __pycache__ in bench/
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixture_text():
    """The text of fixtures/<section>/<name>."""
    def read(section, name):
        return (FIXTURES / section / name).read_text()
    return read
