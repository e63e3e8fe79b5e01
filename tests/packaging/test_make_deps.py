# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Which make targets install Debian packages: deps, check, demo and bench
install what is missing (scripts/ensure-deps, as root), bench its own
packages too; every other target only checks (--check). Read off
`make -n`, which runs nothing; no root needed, seconds."""

import pathlib
import re
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def deps_line(*goals, env_extra=None):
    """The scripts/ensure-deps line `make -n GOALS` would run."""
    out = subprocess.run(["make", "-n", *goals, *(env_extra or [])], cwd=REPO,
                         capture_output=True, text=True, timeout=60, check=True)
    lines = [l for l in out.stdout.splitlines() if "scripts/ensure-deps" in l]
    assert lines, f"make -n {' '.join(goals)} runs no scripts/ensure-deps:\n{out.stdout}"
    return lines[0]


def flags(line):
    return set(re.findall(r"--[a-z]+", line))


@pytest.mark.parametrize("goal", ["check", "demo", "deps"])
def test_installing_targets_install_the_base_packages(goal):
    assert flags(deps_line(goal)) == set()


def test_bench_installs_its_own_packages_too():
    assert flags(deps_line("bench")) == {"--bench"}


def test_check_and_bench_together_install_both():
    assert flags(deps_line("check", "bench")) == {"--bench"}


def test_deps_with_bench_set_installs_bench_packages():
    assert flags(deps_line("deps", env_extra=["BENCH=1"])) == {"--bench"}


@pytest.mark.parametrize("goal", ["build", "lint", "check-sanitize"])
def test_other_targets_only_check(goal):
    assert flags(deps_line(goal)) == {"--check"}
