# Licensed under the Apache License, Version 2.0; see LICENSE.
"""BROKEN and MISSED in run_bench.py's table: a section whose extraction
finds no data says BROKEN with the reason; a real figure that misses its
goal says MISSED. Nothing is started: the sections here are stand-ins fed
recorded output (fixtures/)."""

import argparse
import json
import shutil
import time

import pytest

import extract as ex
import run_bench as rb


@pytest.fixture
def ctx():
    c = rb.Ctx(argparse.Namespace(quick=True, build="build"))
    yield c
    shutil.rmtree(c.dir, ignore_errors=True)


def table(ctx, sections):
    return rb.report(ctx, sections, time.time(), ["0.00"] * 3)


def goals_block(text):
    return text.split("\nGoals\n", 1)[1].split("\n\n", 1)[0]


def forged_run(v_sent, v_accepted, last_kept=True):
    return {"target_rate": 200_000, "send_rate": 199_990.0, "drops": 0, "cpu_share": 0.4,
            "v_sent": v_sent, "v_accepted": v_accepted, "v_last_kept": last_kept}


def test_section_without_data_is_broken(ctx, fixture_text):
    """The control section's count of V's announcements, given a ?json
    body without the counter: BROKEN, with the reason, not a V lost N."""
    body = json.loads(fixture_text("control", "status.json"))
    del body["receivers"][0]["events"]["accepted"]
    before = ex.receiver_status(fixture_text("control", "first-status.json"))

    def section(ctx):
        after = ex.receiver_status(json.dumps(body))
        ex.v_accepted(before, after, after["members"][0]["url"], 0)
        return ["   unreachable"]
    lines = rb.run_section(ctx, "control", section)
    assert lines == ["   BROKEN: /beacon-status?json has no events.accepted"]
    goals = goals_block(table(ctx, {"control": lines}))
    assert "BROKEN control: a measurement found no data: /beacon-status?json has no " \
           "events.accepted" in goals
    assert "MISSED" not in goals and "met" not in goals


def test_v_lost_is_missed_and_v_silent_is_broken(ctx):
    rb.control_goal(ctx, [forged_run(3, 3)], v_ok=True)
    rb.control_goal(ctx, [forged_run(3, 2)], v_ok=True)
    rb.control_goal(ctx, [forged_run(0, 0)], v_ok=True)
    rb.control_goal(ctx, [], v_ok=True)
    goals = goals_block(table(ctx, {})).splitlines()
    assert goals[0].startswith("   met    ") and "V lost 0 (accepted 3 of 3)" in goals[0]
    assert goals[1].startswith("   MISSED ") and "V lost 1 (accepted 2 of 3)" in goals[1]
    assert goals[2].startswith("   BROKEN ") and "V sent no announcement" in goals[2]
    assert goals[3].startswith("   BROKEN ") and "no forged run at 200,000/s" in goals[3]


def test_joins_not_seen_are_missed_haproxy_serving_none_is_broken(ctx):
    res = {"join": [], "haproxy_join": [], "evict": [],
           "failures": ["haproxy join of s1 not seen: "]}
    rb.convergence_goals(ctx, res, 5, haproxy=True)
    marks = [(g[2], g[3]) for g in ctx.goals]
    assert marks == [(rb.BROKEN, "HAProxy served none of its 5 joins: haproxy join of s1 "
                      "not seen: "),
                     (False, "none of 5 seen"), (False, "none of 5 seen")]


def test_a_part_without_data_is_broken_and_the_others_run(ctx):
    def empty(ctx):
        return ["   a) " + str(ex.library_figures("machine: x\n"))]

    def fine(ctx):
        return ["   b) figures"]
    lines = rb.run_parts(ctx, "churn", (("a) join", empty, (ctx,)),
                                        ("b) throughput", fine, (ctx,))))
    assert lines == ["   BROKEN: a) join: bench_datagram printed no row (a) (b) (c)",
                     "   b) figures"]
    assert [g[2] for g in ctx.goals] == [rb.BROKEN]


def services_runs(unpaced, paced=(198_000,)):
    """Forged runs as bench_services keeps them: paced ones at 200k/s with
    no drop, then the unpaced rounds (target_rate 0) with their kept/s."""
    runs = [{"target_rate": 200_000, "drops": 0, "kept_rate": k} for k in paced]
    return runs + [{"target_rate": 0, "drops": 0, "kept_rate": k} for k in unpaced]


def test_services_ratio_met_missed_and_broken(ctx):
    """The ratio is of the unpaced kept-up rates (medians of the rounds);
    datagrams not all counted as mac mismatch make it MISSED; no unpaced
    run, or none kept with one service, is BROKEN."""
    ok = {1: (900, 900), 20: (800, 800)}
    rb.services_goal(ctx, services_runs([300_000, 320_000, 310_000]),
                     services_runs([290_000, 280_000, 300_000]), ok)
    rb.services_goal(ctx, services_runs([300_000]), services_runs([260_000]), ok)
    rb.services_goal(ctx, services_runs([300_000]), services_runs([300_000]),
                     {1: (900, 900), 20: (790, 800)})
    rb.services_goal(ctx, services_runs([]), services_runs([300_000]), ok)
    rb.services_goal(ctx, services_runs([0]), services_runs([300_000]), ok)
    goals = goals_block(table(ctx, {})).splitlines()
    assert goals[0].startswith("   met    ") and "ratio 0.935 (290000 vs 310000/s" in goals[0]
    assert goals[1].startswith("   MISSED ") and "ratio 0.867" in goals[1]
    assert goals[2].startswith("   MISSED ") and "ratio 1.000" in goals[2] \
        and "20 service(s) 790 of 800" in goals[2]
    assert goals[3].startswith("   BROKEN ") and "no unpaced forged run" in goals[3]
    assert goals[4].startswith("   BROKEN ") and "one service kept no datagram" in goals[4]


def test_derived_key_ratio_met_missed_and_broken(ctx):
    """Control b): the ratio of the unpaced kept-up rates (medians of the
    rounds), derived / shared key; a datagram counted as anything but mac
    mismatch (url not canonical: the flood measured the cheap drop) makes it
    MISSED; no unpaced run, or none kept with the shared key, is BROKEN."""
    ok = {"shared": ({"mac_mismatch": 900}, 900), "derived": ({"mac_mismatch": 800}, 800)}
    rb.derive_goal(ctx, services_runs([300_000, 320_000, 310_000]),
                   services_runs([260_000, 250_000, 270_000]), ok)
    rb.derive_goal(ctx, services_runs([300_000]), services_runs([230_000]), ok)
    rb.derive_goal(ctx, services_runs([300_000]), services_runs([300_000]),
                   {"shared": ({"mac_mismatch": 900}, 900),
                    "derived": ({"url_not_canonical": 800}, 800)})
    rb.derive_goal(ctx, services_runs([300_000]), services_runs([]), ok)
    rb.derive_goal(ctx, services_runs([0]), services_runs([300_000]), ok)
    goals = goals_block(table(ctx, {})).splitlines()
    assert goals[0].startswith("   met    ") and "ratio 0.839 (260000 vs 310000/s" in goals[0]
    assert goals[1].startswith("   MISSED ") and "ratio 0.767" in goals[1]
    assert goals[2].startswith("   MISSED ") and "ratio 1.000" in goals[2] \
        and "derived url_not_canonical 800 of 800" in goals[2]
    assert goals[3].startswith("   BROKEN ") and "no unpaced forged run" in goals[3]
    assert goals[4].startswith("   BROKEN ") and "shared-key receiver kept no" in goals[4]


def test_member_key_growth_met_and_missed(ctx, fixture_text):
    """The library's goal: a valid datagram under a master <= 150 ns over a
    shared key, from the f-e difference bench_datagram prints."""
    out = fixture_text("library", "bench_datagram.txt")
    ns, d = ex.library_figures(out), ex.library_deltas(out)
    lines = rb.member_key_lines(ctx, ns, d)
    rb.member_key_lines(ctx, ns, dict(d, **{"f-e": 150.0}))
    rb.member_key_lines(ctx, ns, dict(d, **{"f-e": 150.1}))
    assert f"a valid datagram +{d['f-e']:.0f} ns under a master" in lines[0]
    goals = [g[2] for g in ctx.goals]
    assert goals[1:] == [True, False]


def wrk_runs(*rps, cpu_us=None):
    return [{"rps": r, "p99": 10.0, "non2xx": 0, "socket_errors": 0, "cpu_us": cpu_us,
             "requests": 10 * int(r)} for r in rps]


def test_routing_ratio_and_join_met_missed_and_broken(ctx):
    """The ratio is of the medians of the rounds, at each table size; a
    join p50 over 5 ms, or a trial never routed, is MISSED; the log's
    times missing (ctx.figure's None) shows BROKEN in the section."""
    runs = {(10, "static"): wrk_runs(1000, 1100, 1050, cpu_us=80.0),
            (10, "routed"): wrk_runs(1040, 1000, 1060, cpu_us=82.0),
            (1000, "static"): wrk_runs(1000, 1000, 1000), (1000, "routed"): wrk_runs(970, 900, 975)}
    lines = rb.routing_throughput_lines(ctx, runs)
    assert any("10 contexts, routed/static" in l and "0.990" in l and "1.025 (CPU" in l
               for l in lines), lines
    join = {10: {"join": [0.001, 0.002, 0.003], "routed_log": None, "failures": []},
            1000: {"join": [0.004, 0.006], "routed_log": [0.001, 0.002],
                   "failures": ["/hot/n3 not routed within 2 s (1000 contexts)"]}}
    lines = rb.routing_join_lines(ctx, join, 3)
    assert "BROKEN (see the goals)" in lines[4] and "failures: 1" in lines[-1]
    goals = goals_block(table(ctx, {})).splitlines()
    assert goals[0].startswith("   met    ") and "with 10 contexts: 0.990" in goals[0] \
        and "proxy CPU per request 82.0 vs 80.0 us" in goals[0]
    assert goals[1].startswith("   MISSED ") and "with 1,000 contexts: 0.970" in goals[1]
    assert goals[2].startswith("   MISSED ") and "10 contexts 2.00 ms" in goals[2] \
        and "1,000 contexts 4.00 ms (p99 6.00, 2 of 3 seen)" in goals[2]
    join[1000] = {"join": [0.004, 0.006, 0.005], "routed_log": [], "failures": []}
    rb.routing_join_lines(ctx, join, 3)
    assert goals_block(table(ctx, {})).splitlines()[3].startswith("   met    ")


def test_scale_ratio_and_join_met_and_missed(ctx):
    """The ratio of the medians of the rounds; the join p50 and p99 at
    1,000 members against at 10, each within 1.5x, every trial seen."""
    lines = rb.scale_throughput_lines(ctx, {"static": wrk_runs(1000, 1100, 1050, cpu_us=80.0),
                                            "beacon": wrk_runs(1040, 1000, 1060, cpu_us=84.0)},
                                      3, 10)
    assert "0.990 (per round" in lines[-2] and "1.050 (CPU" in lines[-2]
    assert lines[-1].endswith("static 0.0, announced 0.0")
    rb.scale_throughput_lines(ctx, {"static": wrk_runs(1000), "beacon": wrk_runs(970)}, 1, 2)
    few = [0.001, 0.002, 0.004]
    rb.scale_join_goal(ctx, {1000: {"join": [0.0015, 0.0028, 0.0056]}, 10: {"join": few}}, 3)
    rb.scale_join_goal(ctx, {1000: {"join": [0.0015, 0.0028, 0.0062]}, 10: {"join": few}}, 3)
    rb.scale_join_goal(ctx, {1000: {"join": [0.001, 0.002]}, 10: {"join": few}}, 3)
    goals = goals_block(table(ctx, {})).splitlines()
    assert goals[0].startswith("   met    ") and ">= 0.98: 0.990 (rounds" in goals[0] \
        and "proxy CPU per request 84.0 vs 80.0 us" in goals[0]
    assert goals[1].startswith("   MISSED ") and "0.970 (rounds 0.970-0.970; 970 vs 1000" \
        in goals[1]
    assert goals[2].startswith("   met    ") and "p50 2.80 vs 2.00 ms (1.40x)" in goals[2] \
        and "p99 5.60 vs 4.00 ms (1.40x)" in goals[2]
    assert goals[3].startswith("   MISSED ") and "p99 6.20 vs 4.00 ms (1.55x)" in goals[3]
    assert goals[4].startswith("   MISSED ") and "seen 2 and 3 of 3" in goals[4]
