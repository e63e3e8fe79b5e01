# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Each benchmark section's figure extraction (bench/extract.py) on the
output it parses, recorded from a real run (fixtures/<section>/), and on
output without the data, which must be BROKEN, never a made-up figure.

A changed log line, ?json field or tool output fails here, in `make check`,
instead of emptying a benchmark silently. The expected figures are the
ones written in the fixture: each test reads them off the text it parses.
"""

import datetime
import json
import re
from pathlib import Path

import pytest

import extract as ex
from extract import Broken

REPO = Path(__file__).resolve().parents[2]


LIBRARY_DELTAS = {"f-e": 352.0, "i-h": 450.0, "j-i": 357.6, "k-f": 441.3}
DERIVED_MAC_MISMATCH = 4440831  # the derived-key receiver of the recorded run


# ---- library: bench_datagram -------------------------------------------------------

def test_library_rows(fixture_text):
    ns = ex.library_figures(fixture_text("library", "bench_datagram.txt"))
    assert ns == {"a": 979.4, "b": 305.7, "c": 108.7, "d": 766.5, "e": 1291.6, "f": 1743.0,
                  "g": 177.7, "h": 481.0, "i": 953.0, "j": 1414.0, "k": 2092.9, "l": 246.3}


def test_library_without_rows_is_broken(fixture_text):
    head = fixture_text("library", "bench_datagram.txt").split("\n(a)")[0]
    with pytest.raises(Broken, match=r"no row \(a\) \(b\) \(c\)"):
        ex.library_figures(head)


def test_library_differences(fixture_text):
    """The run-by-run differences: a member key on a valid and a forged
    datagram, a second master, 256 revoked urls; none is a row."""
    out = fixture_text("library", "bench_datagram.txt")
    assert ex.library_deltas(out) == LIBRARY_DELTAS
    assert set(ex.library_figures(out)) == set("abcdefghijkl")
    with pytest.raises(Broken, match="no difference f-e"):
        ex.library_deltas(out.split("\ndifferences")[0])


def test_dropped_totals_sum_every_balancer(fixture_text):
    """The derived-key receiver of control b): every forged datagram it
    was sent dropped as mac mismatch, none as url not canonical."""
    before = ex.dropped_totals(fixture_text("control", "before-derived.json"))
    after = ex.dropped_totals(fixture_text("control", "derived.json"))
    moved = {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}
    assert moved == {"mac_mismatch": DERIVED_MAC_MISMATCH}
    assert after["url_not_canonical"] == 0 and after["revoked"] == 0
    with pytest.raises(Broken, match="no dropped counters"):
        ex.dropped_totals('{"receivers": [{"balancer": "balancer://cluster"}]}')


# ---- request (and footprint, churn): wrk --latency ----------------------------------

def test_wrk_figures(fixture_text):
    res = ex.wrk_figures(fixture_text("request", "wrk.txt"))
    assert res["rps"] == 8477.11
    assert (res["p50"], res["p75"], res["p90"], res["p99"]) == (3.16, 5.15, 7.72, 17.42)
    assert res["requests"] == 16990
    assert (res["non2xx"], res["socket_errors"]) == (0, 0)


def test_wrk_counts_non2xx_and_socket_errors(fixture_text):
    """wrk against a server answering 404, and one that closes every other
    connection unanswered."""
    res = ex.wrk_figures(fixture_text("request", "wrk-non2xx.txt"))
    assert (res["requests"], res["non2xx"], res["socket_errors"]) == (1841, 1841, 0)
    assert (res["p50"], res["p99"]) == (0.711, 7.47)
    res = ex.wrk_figures(fixture_text("request", "wrk-socket-errors.txt"))
    assert (res["requests"], res["non2xx"], res["socket_errors"]) == (7626, 0, 15252)
    assert res["socket_error_kinds"] == {"connect": 0, "read": 15252, "write": 0,
                                         "timeout": 0}
    assert res["p99"] == pytest.approx(0.232)


def test_wrk_latency_units():
    assert ex.wrk_ms("456.00us") == pytest.approx(0.456)
    assert ex.wrk_ms("1.50s") == 1500.0
    assert ex.wrk_ms("2.00m") == 120000.0
    assert ex.wrk_ms("-") is None


def test_wrk_that_made_no_request_is_broken(fixture_text):
    """wrk against a closed port prints one line, no figure."""
    with pytest.raises(Broken, match="Requests/sec"):
        ex.wrk_figures(fixture_text("request", "wrk-refused.txt"))
    zero = re.sub(r"\d+ requests in", "0 requests in", fixture_text("request", "wrk.txt"))
    with pytest.raises(Broken, match="no request"):
        ex.wrk_figures(zero)


def test_wrk_without_latency_distribution_is_broken(fixture_text):
    text = fixture_text("request", "wrk.txt")
    no_latency = re.sub(r"(?s)  Latency Distribution.*?(?=\s+\d+ requests)", "", text)
    with pytest.raises(Broken, match="50% latency"):
        ex.wrk_figures(no_latency)
    with pytest.raises(Broken, match="Requests/sec"):
        ex.wrk_figures(text.replace("Requests/sec", "Requests/s"))


# ---- control: bench_flood, /proc, /beacon-status?json -------------------------------

def test_flood_and_sink_lines(fixture_text):
    f = ex.flood_figures(fixture_text("control", "flood.txt"))
    assert (f["sent"], f["rate"], f["seconds"]) == (299648, 199705.0, 1.500453)
    s = ex.sink_figures(fixture_text("control", "sink.txt"))
    assert s["received"] == 299648
    assert s["us_per_dgram"] == pytest.approx(1e6 * 0.546411 / 299648)


def test_flood_without_its_line_is_broken():
    with pytest.raises(Broken, match="no sent, rate, seconds"):
        ex.flood_figures("")
    with pytest.raises(Broken, match="sent nothing"):
        ex.flood_figures("sent=0 send_errors=0 seconds=1.0 rate=0.0 cpu_seconds=0.0")
    with pytest.raises(Broken, match="received nothing"):
        ex.sink_figures("received=0 seconds=1.5 cpu_seconds=0.0")


def test_proc_net_udp_row(fixture_text):
    text = fixture_text("control", "proc-net-udp.txt")
    row = text.splitlines()[1].split()
    got = ex.udp_row(text, row[1])
    assert got == {"inode": int(row[9]), "rx_queue": int(row[4].split(":")[1], 16),
                   "drops": int(row[12])}
    assert ex.udp_row(text, "0100007F:0000") is None  # nothing bound: a state
    with pytest.raises(Broken, match="no header"):
        ex.udp_row("\n".join(text.splitlines()[1:]), row[1])


def test_proc_net_snmp(fixture_text):
    c = ex.udp_snmp(fixture_text("control", "proc-net-snmp.txt"))
    assert {"RcvbufErrors", "InErrors", "InDatagrams"} <= set(c)
    with pytest.raises(Broken, match="no Udp"):
        ex.udp_snmp("Ip: Forwarding\nIp: 1\n")


def test_schedstat(fixture_text):
    lines = fixture_text("control", "schedstat.txt").splitlines()
    assert ex.schedstat_seconds(lines) == sum(int(l.split()[0]) for l in lines) / 1e9 > 0
    assert ex.schedstat_seconds([]) is None


def test_receiver_load():
    r = ex.receiver_load(300000, 1.5, 0.6)
    assert r["kept_rate"] == 200000 and r["cpu_share"] == pytest.approx(0.4)
    assert r["us_per_dgram"] == pytest.approx(2.0)
    with pytest.raises(Broken, match="CPU time grew 0.000000 s"):
        ex.receiver_load(300000, 1.5, 0.0)
    # a child that holds the socket but does not read it: 0.2 ms for 300k
    with pytest.raises(Broken, match="not the child that owns the receiver"):
        ex.receiver_load(300000, 1.5, 0.0002)


def test_receiver_owner(fixture_text):
    """The child receiver_pid() measures: owner_pid of ?json."""
    status = ex.receiver_status(fixture_text("control", "status.json"))
    assert ex.receiver_owner(status) == 19431
    assert ex.receiver_owner(dict(status, owner_pid=0)) is None
    del status["owner_pid"]
    with pytest.raises(Broken, match="no owner_pid"):
        ex.receiver_owner(status)


def control_statuses(fixture_text):
    before = ex.receiver_status(fixture_text("control", "first-status.json"))
    after = ex.receiver_status(fixture_text("control", "status.json"))
    return before, after


def test_v_accepted_comes_from_the_receivers_counter(fixture_text):
    """V, the one member, and the counter of accepted announcements: the
    difference between two statuses, and V's last ts kept."""
    before, after = control_statuses(fixture_text)
    (v,) = after["members"]
    got = ex.v_accepted(before, after, v["url"], v["last_ts"])
    assert got == {"accepted": after["events"]["accepted"] - before["events"]["accepted"],
                   "last_kept": True}
    assert got["accepted"] > 0
    assert not ex.v_accepted(before, after, v["url"], v["last_ts"] + 1)["last_kept"]


def test_v_accepted_without_the_counter_or_member_is_broken(fixture_text):
    before, after = control_statuses(fixture_text)
    (v,) = after["members"]
    no_counter = json.loads(json.dumps(after))
    del no_counter["events"]["accepted"]
    with pytest.raises(Broken, match="no events.accepted"):
        ex.v_accepted(before, no_counter, v["url"], v["last_ts"])
    with pytest.raises(Broken, match="no member http://127.0.0.1:9"):
        ex.v_accepted(before, after, "http://127.0.0.1:9", v["last_ts"])


def test_status_without_its_fields_is_broken(fixture_text):
    doc = json.loads(fixture_text("control", "status.json"))
    del doc["receivers"][0]["events"]
    with pytest.raises(Broken, match="receiver has no events"):
        ex.receiver_status(json.dumps(doc))
    with pytest.raises(Broken, match="no receivers"):
        ex.receiver_status('{"receivers": [], "senders": []}')
    with pytest.raises(Broken, match="not JSON"):
        ex.receiver_status("<html>")


def test_forged_flood_counted_as_mac_mismatch(fixture_text):
    """The forged datagrams the flood sent are the receiver's
    dropped.mac_mismatch: the field the forged rows are read against."""
    before, after = control_statuses(fixture_text)
    assert after["dropped"]["mac_mismatch"] > before["dropped"]["mac_mismatch"]


# ---- services: ?json of a receiver with 20 balancers --------------------------------

def services_statuses(fixture_text):
    """Before and after the forged floods at the receiver with 20 services."""
    return (ex.service_receivers(fixture_text("services", "first-status-20.json")),
            ex.service_receivers(fixture_text("services", "status-20.json")))


def test_service_receivers_lists_each_balancer_with_its_service(fixture_text):
    before, after = services_statuses(fixture_text)
    names = [f"s{i:02d}" for i in range(1, 21)]
    assert sorted(after) == [f"balancer://{n}" for n in names]
    assert [after[f"balancer://{n}"]["service"] for n in names] == names
    assert all(rx["mac_mismatch"] == 0 for rx in before.values())


def test_mac_mismatches_sums_every_balancer(fixture_text):
    """The forged datagrams the floods delivered (680,320 in the recorded
    run): counted in the first balancer's dropped.mac_mismatch, read off
    all of them together."""
    before, after = services_statuses(fixture_text)
    assert ex.mac_mismatches(before, after) == 680320
    assert after["balancer://s01"]["mac_mismatch"] == 680320
    moved = dict(after, **{"balancer://s02": {"service": "s02", "mac_mismatch": 7}})
    assert ex.mac_mismatches(before, moved) == 680327
    assert ex.mac_mismatches(after, after) == 0


@pytest.mark.parametrize("drop, reason", [
    (("service",), "receiver has no service"),
    (("balancer",), "receiver has no balancer"),
    (("dropped", "mac_mismatch"), "no dropped.mac_mismatch"),
])
def test_service_receivers_without_a_field_is_broken(fixture_text, drop, reason):
    doc = json.loads(fixture_text("services", "status-20.json"))
    rx = doc["receivers"][7]
    for key in drop[:-1]:
        rx = rx[key]
    del rx[drop[-1]]
    with pytest.raises(Broken, match=reason):
        ex.service_receivers(json.dumps(doc))
    with pytest.raises(Broken, match="no receivers"):
        ex.service_receivers('{"receivers": [], "senders": []}')


# ---- convergence: the error log ---------------------------------------------------

def test_added_and_evicted_lines(fixture_text):
    text = fixture_text("convergence", "convergence-error.log")
    added = ex.log_times(text, ex.ADDED_RE)
    evicted = re.findall(ex.EVICTED_RE, text)
    assert len(added) == 5 and set(evicted) == set(added)
    assert added["http://127.0.0.1:48535"] == datetime.datetime(
        2026, 12, 1, 21, 41, 42, 498665).timestamp()
    sent = {u: t - 0.001 for u, t in added.items()}
    assert ex.delays(added, sent, "BCN00030 added") == pytest.approx([0.001] * 5, abs=1e-6)
    assert ex.logged(text, ex.EVICTED_RE, "BCN00035 evicted", 5) == 5


def test_convergence_without_its_lines_is_broken(fixture_text):
    text = fixture_text("convergence", "convergence-error.log")
    other = {"http://127.0.0.1:9": 0.0}
    with pytest.raises(Broken, match="no BCN00030 added line .* 1 urls"):
        ex.delays(ex.log_times(text, ex.ADDED_RE), other, "BCN00030 added")
    quiet = "\n".join(l for l in text.splitlines() if "BCN00035" not in l)
    with pytest.raises(Broken, match="no BCN00035 evicted line .* 5 happened"):
        ex.logged(quiet, ex.EVICTED_RE, "BCN00035 evicted", 5)
    assert ex.logged(quiet, ex.EVICTED_RE, "BCN00035 evicted", 0) == 0
    bad_stamp = re.sub(r"^\[\w{3} ", "[Xyz ", text, flags=re.M)
    with pytest.raises(Broken, match="time stamp"):
        ex.log_times(bad_stamp, ex.ADDED_RE)


# ---- footprint: smaps_rollup --------------------------------------------------------

def test_smaps_rollup(fixture_text):
    assert ex.smaps_memory(fixture_text("footprint", "smaps_rollup.txt")) == {
        "Rss": 10188, "Pss": 5770}
    with pytest.raises(Broken, match="no Rss"):
        ex.smaps_memory("Pss: 1 kB\n")


# ---- churn: ?json growth and events, BCN00038 ---------------------------------------

def test_churn_status(fixture_text):
    a = ex.receiver_status(fixture_text("churn", "first-status.json"))
    b = ex.receiver_status(fixture_text("churn", "status.json"))
    assert set(ex.growth(b)) >= {"used", "free", "recyclable"}
    assert ex.active_members(b) == sum(1 for m in b["members"] if m["state"] == "active")
    names = ("added", "recycled", "leaving", "reenabled", "evicted")
    delta = ex.events_delta(a, b, names)
    assert delta == {k: b["events"][k] - a["events"][k] for k in names}
    assert delta["added"] > 0


def test_churn_status_without_growth_is_broken(fixture_text):
    doc = json.loads(fixture_text("churn", "status.json"))
    doc["receivers"][0]["growth"] = None
    with pytest.raises(Broken, match="growth null"):
        ex.growth(ex.receiver_status(json.dumps(doc)))


def test_recycled_lines(fixture_text):
    text = fixture_text("churn", "join-recycled-error.log")
    pairs = ex.RECYCLED_RE.findall(text)
    times = ex.log_times(text, ex.RECYCLED_TIME_RE)
    assert pairs and set(times) == {new for _, new in pairs}


# ---- fan-out: announcements read back ------------------------------------------------

def test_fan_rate(fixture_text):
    first = fixture_text("fanout", "fan-first.txt").encode()
    lasts = fixture_text("fanout", "fan-last.txt").encode().splitlines()
    f0 = ex.datagram_fields(first)
    top = max((ex.datagram_fields(d) for d in lasts), key=lambda f: int(f["seq"]))
    r = ex.fan_rate(first, lasts + [None])
    span = (int(top["ts"]) - int(f0["ts"])) / 1e6
    assert r == {"announcements": int(top["seq"]) + 1, "span_s": span,
                 "announcements_per_s": (int(top["seq"]) - int(f0["seq"])) / span}
    assert ex.LEAVING in fixture_text("fanout", "fan-leaving.txt").encode()
    assert ex.LEAVING not in first


def test_fan_rate_without_announcements_is_broken(fixture_text):
    first = fixture_text("fanout", "fan-first.txt").encode()
    with pytest.raises(Broken, match="no announcement read back"):
        ex.fan_rate(None, [])
    with pytest.raises(Broken, match="at any address"):
        ex.fan_rate(first, [None, None])
    with pytest.raises(Broken, match="no seq="):
        ex.fan_rate(re.sub(rb" seq=\d+", b"", first), [first])


# ---- routing: the route table in ?json, BCN00146's time stamps ---------------------

def test_routed_contexts(fixture_text):
    """The 10-context proxy of a --quick run: cold's member claims 8
    contexts, hot's members /hot/app and /hot/n0."""
    routes = ex.routed_contexts(fixture_text("routing", "status.json"))
    assert len(routes) == 10
    assert routes["/apps/c0001"] == routes["/apps/c0008"] == "balancer://cold"
    assert routes["/hot/app"] == routes["/hot/n0"] == "balancer://hot"
    assert "/apps/c0009" not in routes
    assert ex.routed_contexts('{"receivers": [], "contexts": []}') == {}


@pytest.mark.parametrize("drop, reason", [("context", "context has no context"),
                                          ("balancer", "context has no balancer")])
def test_routed_contexts_without_a_field_is_broken(fixture_text, drop, reason):
    doc = json.loads(fixture_text("routing", "status.json"))
    del doc["contexts"][3][drop]
    with pytest.raises(Broken, match=reason):
        ex.routed_contexts(json.dumps(doc))
    del doc["contexts"]
    with pytest.raises(Broken, match="has no contexts"):
        ex.routed_contexts(json.dumps(doc))


def test_us_per_request():
    """A child that came during the run counts from 0; one that did
    nothing adds nothing; no CPU time moved at all is BROKEN."""
    before = {10: 1.0, 11: 2.0}
    after = {10: 1.5, 11: 2.0, 12: 0.5}
    assert ex.us_per_request(before, after, 10_000) == pytest.approx(100.0)
    with pytest.raises(Broken, match="used 0.000000 s of CPU for 10000 requests"):
        ex.us_per_request(before, before, 10_000)
    with pytest.raises(Broken, match="for 0 requests"):
        ex.us_per_request(before, after, 0)


def test_routed_lines(fixture_text):
    """Each context routed once, its first line's time (a withdrawn one,
    BCN00150, is not routed); the 10 trials' /hot/n1 ... /hot/n10."""
    text = fixture_text("routing", "routing-error.log")
    routed = ex.log_times(text, ex.ROUTED_RE)
    assert len(routed) == 20
    assert routed["/hot/n1"] == datetime.datetime(2026, 12, 2, 4, 39, 34, 798664).timestamp()
    trials = [f"/hot/n{k}" for k in range(1, 11)]
    sent = {c: routed[c] - 0.0005 for c in trials}
    assert ex.delays(routed, sent, "BCN00146 routed") == pytest.approx([0.0005] * 10,
                                                                      abs=1e-6)
    quiet = "\n".join(l for l in text.splitlines() if "BCN00146" not in l)
    with pytest.raises(Broken, match="no BCN00146 routed line .* 10 urls"):
        ex.delays(ex.log_times(quiet, ex.ROUTED_RE), sent, "BCN00146 routed")


# ---- scale: the status views and balancer-manager's XML -----------------------------

def test_status_views_list_every_member(fixture_text):
    """The 10-member proxy of a full run: each view lists the 10."""
    assert ex.html_members(fixture_text("scale", "status-html-10.txt")) == 10
    assert ex.json_members(fixture_text("scale", "status-json-10.txt")) == 10
    assert ex.metrics_members(fixture_text("scale", "status-metrics-10.txt")) == 10


def test_status_views_without_their_members_are_broken(fixture_text):
    html = fixture_text("scale", "status-html-10.txt")
    with pytest.raises(Broken, match="no members table"):
        ex.html_members(html.replace('<table class="members">', "<table>"))
    metrics = fixture_text("scale", "status-metrics-10.txt")
    with pytest.raises(Broken, match="no beacon_member_info"):
        ex.metrics_members("\n".join(l for l in metrics.splitlines()
                                     if "beacon_member_info" not in l))
    with pytest.raises(Broken, match="not JSON"):
        ex.json_members(html)


def test_manager_members_in_rotation(fixture_text):
    """An excerpt of the 1,000-member proxy (slots=1024) of a full run,
    restored after its join trials: 3 members in rotation, 2 trial members
    that left and a free reserved slot's placeholder, out of rotation
    (Init Dis)."""
    text = fixture_text("scale", "manager.xml")
    workers = ex.manager_members(text)
    assert len(workers) == 6
    assert workers["http://127.0.100.1:33625"] == {"Init", "Ok"}
    assert workers["http://127.0.99.20:33625"] == workers["http://slot-1024.beacon.invalid"] \
        == {"Init", "Dis"}
    assert ex.in_rotation(workers, list(workers) + ["http://127.0.100.9:33625"]) == 3
    empty = re.sub(r"<httpd:worker>.*?</httpd:worker>", "", text, flags=re.S)
    assert ex.manager_members(empty) == {}


def test_manager_without_the_balancer_is_broken(fixture_text):
    with pytest.raises(Broken, match="lists no balancer://other"):
        ex.manager_members(fixture_text("scale", "manager.xml"), "other")
    with pytest.raises(Broken, match="not XML"):
        ex.manager_members(fixture_text("scale", "status-json-10.txt"))


def test_closed_to(fixture_text):
    """ss's time-wait rows with their timers: the rows whose peer is port
    38045 (a proxy's closed connections to the scale backend), counted
    when they entered time-wait within the window."""
    text = fixture_text("scale", "ss-time-wait.txt")
    rows = [l for l in text.splitlines() if l.split()[3].endswith(":38045")]
    left = sorted(int(m.group(1)) for l in rows if (m := re.search(r"timewait,(\d+)sec", l)))
    assert len(rows) == len(left) + 1  # and one expiring: "timewait,,0"
    assert ex.closed_to(text, 38045, 60) == len(left) > 0
    assert ex.closed_to(text, 38045, 60 - left[0]) == len(left) - left.count(left[0])
    assert ex.closed_to(text, 38045, 0) == 0
    assert ex.closed_to("", 38045, 10) == 0
    with pytest.raises(Broken, match="without a peer address or timer"):
        ex.closed_to("0 0 127.0.0.1:1 127.0.0.1:38045\n", 38045, 10)


# ---- log lines no quick run writes: their regexes against the C source -------------

def source_message(tag):
    """The format of the log line BCNLOGNO(tag) in src/: its string
    literals joined, a format macro (APR_TIME_T_FMT...) read as d."""
    for path in sorted((REPO / "src").glob("*.c")):
        text = path.read_text()
        m = re.search(r"BCNLOGNO\(%s\)\s*((?:\"(?:[^\"\\]|\\.)*\"\s*|[A-Z_0-9]+\s*)+)"
                      % tag, text)
        if m:
            parts = re.findall(r"\"((?:[^\"\\]|\\.)*)\"|([A-Z_0-9]+)", m.group(1))
            return "".join(lit if lit else "d" for lit, _macro in parts)
    raise AssertionError(f"BCN{tag} is in no file of src/")


def rendered(tag, *args):
    """BCN<tag>'s line with args for its %s and 7 for its numbers."""
    fmt = source_message(tag)
    it = iter(args)
    text = re.sub(r"%(s|d|u|ld|lu)", lambda m: next(it) if m.group(1) == "s" else "7", fmt)
    return f"BCN{tag}: " + text


@pytest.mark.parametrize("regex, tag, args, groups", [
    (ex.WAITS_RE, "00039", ("http://127.0.0.1:1", "cluster", ""), ()),
    (ex.NO_SLOT_RE, "00037", ("http://127.0.0.1:1", "cluster", ""), ()),
    (ex.RECYCLED_RE.pattern, "00038", ("http://a:1", "http://b:2", "cluster"),
     ("http://a:1", "http://b:2")),
])
def test_rare_log_lines_match_the_source(regex, tag, args, groups):
    m = re.search(regex, rendered(tag, *args))
    assert m, (regex, rendered(tag, *args))
    assert m.groups() == groups


# ---- load: mod_status ?auto, the factors in ?json, HAProxy's weight ------------------

def test_status_auto(fixture_text):
    st = ex.status_auto(fixture_text("load", "server-status-auto.txt"))
    assert (st["Total Accesses"], st["BusyWorkers"], st["IdleWorkers"]) == (15785, 8, 0)


def test_status_auto_without_counters_is_broken():
    """An HTML status page (no ?auto), or ExtendedStatus off: no figure."""
    with pytest.raises(Broken, match="no Total Accesses"):
        ex.status_auto("<html><body>Apache Server Status</body></html>")
    with pytest.raises(Broken, match="no BusyWorkers"):
        ex.status_auto("Total Accesses: 3\nServerUptimeSeconds: 9\n")


def test_member_factors_of_the_fleet(fixture_text):
    f = ex.member_factors(ex.receiver_status(fixture_text("load", "load-status.json")))
    assert sorted(f) == ["http://127.0.0.1:54563", "http://127.0.0.1:54787",
                         "http://127.0.0.1:57169"]
    assert all((v["lbfactor"], v["lbfactor_announced"]) == (50.0, 50.0)
               for v in f.values())


def test_member_factors_of_no_member_is_none(fixture_text):
    """Polled before the members join: nothing yet, which is no error."""
    doc = json.loads(fixture_text("load", "load-status.json"))
    doc["receivers"][0]["members"] = []
    assert ex.member_factors(ex.receiver_status(json.dumps(doc))) == {}


def test_haproxy_weight(fixture_text):
    assert ex.haproxy_weight(fixture_text("load", "haproxy-weight.txt")) == (24, 100)
    with pytest.raises(Broken, match="No such server"):
        ex.haproxy_weight("No such server.\n")


def test_stability_wrk(fixture_text):
    res = ex.wrk_figures(fixture_text("load", "wrk-stability.txt"))
    assert (res["rps"], res["p99"]) == (1154.94, 127.01)


def test_spread():
    st = ex.spread([50.0, 55.0, 45.0, 52.5], "lbfactor")
    assert (st["min"], st["max"], st["median"]) == (45.0, 55.0, 51.25)
    assert st["spread"] == pytest.approx(10 / 51.25)
    assert ex.spread([50.0] * 3, "x")["spread"] == 0
    with pytest.raises(Broken, match="no sample of lbfactor of u"):
        ex.spread([], "lbfactor of u")
# ---- load: a cold member joins; 1,000 members reporting load -------------------------

def test_cold_join_backend_stats(fixture_text):
    s = ex.backend_stats(fixture_text("load", "join-backend-stats.json"))
    assert (s["requests"], s["cold_requests"], s["cold_done"], s["in_flight"]) == \
        (3522, 300, 300, 0)
    assert s["cold_done_at"] - s["first_at"] == pytest.approx(2.777, abs=1e-3)


def test_cold_join_backend_stats_without_a_field_is_broken(fixture_text):
    doc = json.loads(fixture_text("load", "join-backend-stats.json"))
    del doc["cold_done_at"]
    with pytest.raises(Broken, match="has no cold_done_at"):
        ex.backend_stats(json.dumps(doc))
    with pytest.raises(Broken, match="not JSON"):
        ex.backend_stats("<html>")


def test_cold_join_wrk(fixture_text):
    res = ex.wrk_figures(fixture_text("load", "join-wrk.txt"))
    assert (res["p50"], res["p99"], res["requests"]) == (16.46, 56.58, 17767)
    assert (res["non2xx"], res["socket_errors"]) == (0, 0)


def test_slow_starts_in_the_error_log(fixture_text):
    """Three members ramped on the slow-start proxy: the two warm ones at
    06:08:15 and the trial's cold one at 06:08:37."""
    times = ex.slow_starts(fixture_text("load", "join-error-slow.log"))
    assert sorted(times) == ["http://127.0.0.1:33557", "http://127.0.0.1:35783",
                             "http://127.0.0.1:40143"]
    cold = times["http://127.0.0.1:35783"] - times["http://127.0.0.1:33557"]
    assert cold == pytest.approx(21.670468, abs=1e-6)
    assert ex.slow_starts("[Sat Dec 05 06:08:15.677882 2026] BCN00030: added backend x") == {}


def test_member_factors_in_force_and_announced(fixture_text):
    ramp = ex.member_factors(ex.receiver_status(fixture_text("load", "join-status-ramp.json")))
    assert ramp == {u: {"lbfactor": 19.0, "lbfactor_announced": 100.0, "slow_start": 28}
                    for u in ("http://127.0.0.1:33557", "http://127.0.0.1:40143")}
    f = ex.member_factors(ex.receiver_status(fixture_text("load", "cpu-status.json")))
    assert [m["lbfactor"] for m in f.values()] == [50.0, 50.0, 60.0, 60.0]
    assert all(m["lbfactor"] == m["lbfactor_announced"] and m["slow_start"] is None
               for m in f.values())


def test_factors_changed(fixture_text):
    a = ex.member_factors(ex.receiver_status(fixture_text("load", "cpu-status.json")))
    b = {u: dict(m, lbfactor=110.0 - m["lbfactor"]) for u, m in list(a.items())[:3]}
    assert ex.factors_changed(a, b) == 3
    assert ex.factors_changed(a, a) == 0


def test_member_factors_without_the_fields_is_broken(fixture_text):
    """A ?json from before issue 34's views (scale's fixture): no lbfactor."""
    with pytest.raises(Broken, match="member has no lbfactor, lbfactor_announced, slow_start"):
        ex.member_factors(ex.receiver_status(fixture_text("scale", "status-json-10.txt")))
