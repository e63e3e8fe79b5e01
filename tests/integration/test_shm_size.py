# Licensed under the Apache License, Version 2.0; see LICENSE.
"""What a receiver's balancers cost in shared memory (issue 32, defect 4).
Each balancer's status records, registry and claims are sized by what it
can hold, 256 urls plus its own slots=, so a slot costs the same however
many services the receiver feeds; the size of each is logged at start
(BCN00210), and apache2 -t refuses a configuration whose balancers would
take more than 1 GiB of it (BCN00211's figure, one line)."""

import re

import pytest

from beacon_env import start_receiver
from test_slots import many_balancers

pytestmark = pytest.mark.beacon

SIZE_RE = re.compile(r"BCN00210: balancer://(\S+) holds (\d+) urls: (\d+) KiB of shared memory")


def shared_kib(pid):
    """The shared mappings of process pid, in KiB (/proc/PID/smaps: every
    mapping whose permissions end in s), as an operator's pmap shows them."""
    total, shared = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", fields[0]):
                shared = fields[1].endswith("s")
            elif fields[0] == "Size:" and shared:
                total += int(fields[1])
    return total


def measured(httpd_factory, services, slots):
    """A started receiver of services balancers of slots= each: the shared
    memory of its parent (KiB) and the sizes it logged, by balancer (at
    start-up, before the receiver listens)."""
    h = start_receiver(many_balancers(httpd_factory, [slots] * services))
    try:
        logged = {name: (int(urls), int(kib))
                  for name, urls, kib in SIZE_RE.findall(h.error_log())}
        return shared_kib(h.pid), logged
    finally:
        h.stop()


def test_a_slot_costs_the_same_shared_memory_with_16_services_as_with_one(httpd_factory):
    """2,000 slots minus 160: the growth of the parent's shared memory is
    about the same whether 1 or 16 balancers hold them (it was 16 times
    as much: every balancer was sized for the whole receiver)."""
    one_small, _ = measured(httpd_factory, 1, 160)
    one_big, one_logged = measured(httpd_factory, 1, 2000)
    many_small, _ = measured(httpd_factory, 16, 10)
    many_big, many_logged = measured(httpd_factory, 16, 125)
    one, many = one_big - one_small, many_big - many_small
    assert one > 0 and many < 1.5 * one, (one, many)
    # what each balancer holds, and the memory it says it takes
    assert one_logged == {"b0": (256 + 2000, one_logged["b0"][1])}, one_logged
    assert set(many_logged) == {f"b{i}" for i in range(16)}, many_logged
    assert {urls for urls, _ in many_logged.values()} == {256 + 125}, many_logged
    # the logged figure is what the parent maps: beacon's share of the
    # growth (httpd's worker records grow by the same slots in both)
    per_slot = (one_logged["b0"][1] - many_logged["b0"][1]) / (2000 - 125)
    assert 0.3 * one / 1840 < per_slot <= one / 1840, (per_slot, one)


def test_apache2_t_refuses_balancers_that_would_take_more_than_1_gib(httpd_factory):
    """Each balancer holds at least 256 urls: 2,000 balancers would take
    several GiB; apache2 -t says how much, in one line."""
    h = many_balancers(httpd_factory, [1] * 2000)
    rc, out = h.check_config(timeout=120)
    assert rc != 0, out
    lines = [l for l in out.splitlines() if "BCN00211" in l or "shared memory" in l]
    assert len(lines) == 1, out
    m = re.search(r"would take (\d+) MiB of shared memory, more than 1024 MiB", lines[0])
    assert m and int(m.group(1)) > 1024, lines[0]


def test_apache2_t_takes_200_balancers_of_100_slots(httpd_factory):
    """The issue's 200 x slots=100 (20,000 reserved, the most): about
    200 MiB now, accepted."""
    rc, out = many_balancers(httpd_factory, [100] * 200).check_config(timeout=60)
    assert rc == 0, out
