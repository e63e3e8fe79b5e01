# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The figures of the benchmarks, from what the programs print: pure
functions, text (or parsed JSON) in, figures out, nothing run or read here.

run_bench.py runs things and hands their output to these; tests/bench runs
them on output recorded from a real run (tests/bench/fixtures), so a log
line, a JSON field or a tool's output that changes breaks a fast test
instead of silently emptying a benchmark.

A measurement that finds no data raises Broken with the reason: no match
of a regex, a field that is absent, zero samples. It is not a figure that
missed its goal (MISSED), and the table says BROKEN.
"""

import datetime
import json
import re
import statistics
import xml.etree.ElementTree as ET


class Broken(Exception):
    """A measurement found no data; the message says what is missing."""


def need(value, reason):
    """value, unless it is None or empty: then Broken(reason)."""
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        raise Broken(reason)
    return value


def fields(text, keys, what):
    """{key: float} of the `key=number` pairs in text (bench_flood's and
    the sink's one line); Broken if one of keys is absent."""
    got = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", text)}
    missing = [k for k in keys if k not in got]
    if missing:
        raise Broken(f"{what} printed no {', '.join(missing)}: {text.strip()[:120]!r}")
    return got


# ---- bench_flood (bench/flood.c) -------------------------------------------------

def flood_figures(stdout):
    """The sender's line: sent, rate, seconds (and send_errors, cpu_seconds)."""
    f = fields(stdout, ("sent", "rate", "seconds"), "bench_flood")
    if f["sent"] <= 0:
        raise Broken(f"bench_flood sent nothing: {stdout.strip()[:120]!r}")
    return f


def sink_figures(stdout):
    """The sink's line -> received, cpu_seconds and us_per_dgram."""
    f = fields(stdout, ("received", "cpu_seconds"), "bench_flood --mode sink")
    if f["received"] <= 0:
        raise Broken("bench_flood --mode sink received nothing")
    f["us_per_dgram"] = 1e6 * f["cpu_seconds"] / f["received"]
    return f


# Less CPU than this per datagram kept is not a receiver's: a bare
# poll + recvmmsg loop costs about 2 us here (bench_flood --mode sink).
MIN_US_PER_DGRAM = 0.05


def receiver_load(kept, busy, cpu):
    """The receiver under a flood: kept/s, its CPU share and us per
    datagram, from the datagrams it kept (sent - drops), the seconds until
    its socket drained and its CPU seconds meanwhile. Broken when its CPU
    time did not move (or hardly: under MIN_US_PER_DGRAM a datagram)
    although it kept datagrams: the wrong process."""
    if busy <= 0:
        raise Broken("the flood took no time")
    if kept > 0 and 1e6 * cpu / kept < MIN_US_PER_DGRAM:
        raise Broken(f"the receiver's CPU time grew {cpu:.6f} s while it took {kept} "
                     "datagrams (not the child that owns the receiver?)")
    return {"kept_rate": kept / busy, "busy_seconds": busy, "cpu_seconds": cpu,
            "cpu_share": cpu / busy, "us_per_dgram": 1e6 * cpu / max(1, kept)}


# ---- bench_datagram (bench/bench_datagram.c) -------------------------------------

LIBRARY_ROW_RE = re.compile(r"^\((\w)\).*?([\d.]+) ns", re.M)
LIBRARY_DELTA_RE = re.compile(r"^(\w)-(\w)\s.*?([+-][\d.]+) ns", re.M)


def library_figures(stdout):
    """{a, b, c, d: ns} of bench_datagram's rows (a) valid, (b) forged,
    (c) SipHash alone, (d) forged with 4 secrets; a, b and c must be there."""
    rows = {k: float(v) for k, v in LIBRARY_ROW_RE.findall(stdout)}
    missing = [k for k in "abc" if k not in rows]
    if missing:
        raise Broken(f"bench_datagram printed no row ({') ('.join(missing)})")
    return rows


def library_deltas(stdout):
    """{"f-e": ns, ...} of bench_datagram's differences, run by run: f-e (a
    member key's cost on a valid datagram), i-h (on a forged one), j-i (a
    second master), k-f (256 revoked urls). Broken without f-e."""
    rows = {f"{x}-{y}": float(v) for x, y, v in LIBRARY_DELTA_RE.findall(stdout)}
    if "f-e" not in rows:
        raise Broken("bench_datagram printed no difference f-e (a member key, valid)")
    return rows


# ---- wrk -------------------------------------------------------------------------

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def wrk_ms(text):
    """wrk's '1.23ms', '456.00us', '1.01s' in milliseconds; None if not one."""
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def wrk_figures(stdout):
    """One `wrk --latency` run: rps, p50/p75/p90/p99 (ms), requests,
    non2xx, socket_errors (and by kind). Broken without Requests/sec, the
    latency distribution, or any request."""
    res = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", stdout)
    res["rps"] = float(need(m, "wrk printed no Requests/sec").group(1))
    for p in ("50", "75", "90", "99"):
        m = re.search(rf"^\s+{p}%\s+(\S+)", stdout, re.M)
        res[f"p{p}"] = need(m and wrk_ms(m.group(1)),
                            f"wrk printed no {p}% latency (--latency)")
    m = re.search(r"(\d+) requests in", stdout)
    res["requests"] = int(need(m, "wrk printed no 'N requests in'").group(1))
    if res["requests"] == 0 or res["rps"] == 0:
        raise Broken("wrk made no request")
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", stdout)
    res["non2xx"] = int(m.group(1)) if m else 0  # wrk prints it only when not 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                  stdout)
    kinds = dict(zip(("connect", "read", "write", "timeout"),
                     (int(x) for x in m.groups()))) if m else {}
    res["socket_errors"] = sum(kinds.values())  # printed only when not all 0
    res["socket_error_kinds"] = kinds
    return res


# ---- /proc -----------------------------------------------------------------------

def udp_row(text, host_hex_port):
    """The row of /proc/net/udp whose local address is host_hex_port
    ("0100007F:1F90"): {inode, rx_queue (bytes), drops}, or None when no
    socket is bound there (a state, not a broken reading)."""
    lines = text.splitlines()
    if not lines or "local_address" not in lines[0] or "drops" not in lines[0]:
        raise Broken("/proc/net/udp has no header with local_address and drops")
    for line in lines[1:]:
        f = line.split()
        if len(f) >= 13 and f[1] == host_hex_port:
            return {"inode": int(f[9]), "rx_queue": int(f[4].split(":")[1], 16),
                    "drops": int(f[12])}
    return None


def udp_snmp(text):
    """The Udp: counters of /proc/net/snmp; Broken without RcvbufErrors
    and InErrors."""
    rows = [line.split() for line in text.splitlines() if line.startswith("Udp:")]
    if len(rows) < 2:
        raise Broken("/proc/net/snmp has no Udp: lines")
    counters = dict(zip(rows[0][1:], (int(x) for x in rows[1][1:])))
    for k in ("RcvbufErrors", "InErrors"):
        if k not in counters:
            raise Broken(f"/proc/net/snmp's Udp: has no {k}")
    return counters


def smaps_memory(text):
    """{Rss, Pss} in KiB of /proc/<pid>/smaps_rollup; Broken without them."""
    out = {m.group(1): int(m.group(2))
           for m in re.finditer(r"^(Rss|Pss):\s+(\d+) kB", text, re.M)}
    for k in ("Rss", "Pss"):
        if k not in out:
            raise Broken(f"smaps_rollup has no {k}:")
    return out


def schedstat_seconds(texts):
    """The run time (the first field, ns) summed over the schedstat texts
    of a process's threads, in seconds; None when none could be read."""
    total, ok = 0, False
    for text in texts:
        try:
            total += int(text.split()[0])
            ok = True
        except (ValueError, IndexError):
            continue
    return total / 1e9 if ok else None


def us_per_request(before, after, requests):
    """Microseconds of CPU per request of the processes {pid: CPU seconds}
    read before and after a run that served `requests` (a pid that came
    meanwhile counts from 0). Broken when no time moved: the wrong
    processes."""
    cpu = sum(t - before.get(pid, 0.0) for pid, t in after.items())
    if requests <= 0 or cpu <= 0:
        raise Broken(f"the proxy's children used {cpu:.6f} s of CPU for {requests} requests")
    return 1e6 * cpu / requests


def stat_seconds(text, clk_tck):
    """utime + stime of /proc/<pid>/stat, in seconds."""
    f = text[text.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / clk_tck


# ---- /beacon-status?json (src/mod_proxy_beacon_status.c) -------------------------

RECEIVER_KEYS = ("events", "dropped", "growth", "members")


def receivers(body):
    """The receivers[] of a /beacon-status?json body; Broken if none."""
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise Broken(f"/beacon-status?json is not JSON: {e}") from None
    return need(doc.get("receivers"), "/beacon-status?json has no receivers")


def receiver_status(body):
    """The first receiver of a /beacon-status?json body, with the fields
    the sections read; Broken if one is absent."""
    rx = receivers(body)[0]
    missing = [k for k in RECEIVER_KEYS if k not in rx]
    if missing:
        raise Broken(f"/beacon-status?json's receiver has no {', '.join(missing)}")
    return rx


def receiver_owner(status):
    """The pid of the child that owns the receiver (owner_pid), or None
    while none does (0); Broken without the field."""
    if "owner_pid" not in status:
        raise Broken("/beacon-status?json's receiver has no owner_pid")
    return status["owner_pid"] or None


def service_receivers(body):
    """{balancer: {service, mac_mismatch}} of a /beacon-status?json body:
    a receiver that feeds several balancers lists each as its own entry of
    receivers[]. Broken when an entry has no balancer, service or
    dropped.mac_mismatch."""
    out = {}
    for rx in receivers(body):
        for k in ("balancer", "service", "dropped"):
            if k not in rx:
                raise Broken(f"/beacon-status?json's receiver has no {k}")
        if "mac_mismatch" not in (rx["dropped"] or {}):
            raise Broken("/beacon-status?json has no dropped.mac_mismatch")
        out[rx["balancer"]] = {"service": rx["service"],
                               "mac_mismatch": rx["dropped"]["mac_mismatch"]}
    return out


def dropped_totals(body):
    """{reason id: count} of a /beacon-status?json body's dropped counters,
    every balancer of every receiver summed (a receiver counts a drop
    before the service is known in its first balancer's). Broken when a
    receiver has none."""
    out = {}
    for rx in receivers(body):
        if not rx.get("dropped"):
            raise Broken("/beacon-status?json's receiver has no dropped counters")
        for k, v in rx["dropped"].items():
            out[k] = out.get(k, 0) + v
    return out


def routed_contexts(body):
    """{context: balancer} of the contexts[] of a /beacon-status?json body:
    the route table of the receiver's virtual host (empty while nothing is
    claimed). Broken without contexts[], or with an entry that has no
    context or balancer."""
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise Broken(f"/beacon-status?json is not JSON: {e}") from None
    if "contexts" not in doc:
        raise Broken("/beacon-status?json has no contexts")
    out = {}
    for c in doc["contexts"]:
        for k in ("context", "balancer"):
            if k not in c:
                raise Broken(f"/beacon-status?json's context has no {k}")
        out[c["context"]] = c["balancer"]
    return out


def mac_mismatches(before, after):
    """The datagrams dropped as mac mismatch between two service_receivers()
    readings, all balancers together (the receiver counts a datagram that
    fails its MAC in its first balancer's)."""
    return sum(rx["mac_mismatch"] - before.get(b, {}).get("mac_mismatch", 0)
               for b, rx in after.items())


def event(status, name):
    """A counter of the receiver's events (accepted, added, recycled...)."""
    if name not in status["events"]:
        raise Broken(f"/beacon-status?json has no events.{name}")
    return status["events"][name]


def events_delta(a, b, names):
    """{name: b - a} of the event counters names between two statuses."""
    return {k: event(b, k) - event(a, k) for k in names}


def growth(status):
    """{used, free, recyclable} of the receiver's growth slots."""
    g = need(status["growth"], "/beacon-status?json has growth null (no growth slots)")
    for k in ("used", "free", "recyclable"):
        if k not in g:
            raise Broken(f"/beacon-status?json has no growth.{k}")
    return g


def member(status, url):
    """The member record of url: state, last_ts, seconds_since_announcement..."""
    for m in status["members"]:
        if m.get("url") == url:
            for k in ("state", "last_ts", "seconds_since_announcement"):
                if k not in m:
                    raise Broken(f"/beacon-status?json's member has no {k}")
            return m
    raise Broken(f"/beacon-status?json lists no member {url}")


def active_members(status):
    """How many members are in state active."""
    states = [need(m.get("state"), "/beacon-status?json's member has no state")
              for m in status["members"]]
    return sum(1 for s in states if s == "active")


def v_accepted(before, after, v_url, v_last_ts):
    """A live member V's announcements the receiver accepted between two
    statuses, from its counter events.accepted (V is the only valid sender
    meanwhile), and whether its record holds V's last announcement
    (last_ts == v_last_ts, the ts of the last one V sent)."""
    return {"accepted": event(after, "accepted") - event(before, "accepted"),
            "last_kept": member(after, v_url)["last_ts"] == v_last_ts}


# ---- the error log -----------------------------------------------------------------

# Every line: "[Mon Nov 30 13:43:15.606798 2026] [module:level] [pid ...] ..."
STAMP_FORMAT = "%a %b %d %H:%M:%S.%f %Y"
ADDED_RE = r"^\[([^\]]+)\] .*BCN00030: added backend (\S+) "
RECYCLED_TIME_RE = r"^\[([^\]]+)\] .*BCN00038: recycled slot of \S+ for (\S+) "
RECYCLED_RE = re.compile(r"BCN00038: recycled slot of (\S+) for (\S+) in balancer://")
EVICTED_RE = r"BCN00035: evicted backend (\S+)"
ROUTED_RE = r"^\[([^\]]+)\] .*BCN00146: context (\S+) routed to balancer://"
WAITS_RE = r"BCN00039: backend \S+ waits"
NO_SLOT_RE = r"BCN00037: cannot add backend"


def log_count(text, regex):
    return len(re.findall(regex, text, re.M))


def logged(text, regex, what, happened):
    """How many lines regex matches; Broken when none does although
    `happened` (> 0) such events were seen by other means: the line
    changed, not the behaviour."""
    n = log_count(text, regex)
    if happened and not n:
        raise Broken(f"no {what} line in the error log, though {happened} happened")
    return n


def log_times(text, regex):
    """{url: epoch seconds} from the microsecond time stamps of the lines
    regex matches (group 1 the time stamp, group 2 the url; the first
    wins). Broken by a time stamp that does not parse."""
    out = {}
    for m in re.finditer(regex, text, re.M):
        if m.group(2) in out:
            continue
        try:
            t = datetime.datetime.strptime(m.group(1), STAMP_FORMAT)
        except ValueError:
            raise Broken(f"error log time stamp {m.group(1)!r} is not {STAMP_FORMAT}") from None
        out[m.group(2)] = t.timestamp()
    return out


def delays(times, sent_at, what):
    """[times[u] - sent_at[u]] of the urls sent; Broken when urls were sent
    but no line was found for any (what: the line, for the reason)."""
    out = [times[u] - t for u, t in sent_at.items() if u in times]
    if sent_at and not out:
        raise Broken(f"no {what} line in the error log for any of {len(sent_at)} urls")
    return out


# ---- fan-out: announcements read back ------------------------------------------------

LEAVING = b" state=leaving "  # in a datagram: cheaper than parsing each


def datagram_fields(datagram):
    """The fields of an announcement (bytes) by key."""
    return dict(f.split("=", 1) for f in datagram.decode("latin-1").split()[1:])


def fan_rate(first, lasts):
    """From the first announcement read back and the last of each address
    (None where none came): announcements made (seq counts from 0), the
    span of their ts (s) and announcements/s."""
    need(first, "no announcement read back")
    got = [datagram_fields(d) for d in lasts if d]
    need(got, "no announcement read back at any address")
    f0 = datagram_fields(first)
    for f in [f0] + got:
        for k in ("seq", "ts"):
            if k not in f:
                raise Broken(f"an announcement read back has no {k}=")
    last = max(got, key=lambda f: int(f["seq"]))
    span = (int(last["ts"]) - int(f0["ts"])) / 1e6
    rate = (int(last["seq"]) - int(f0["seq"])) / span if span > 0 else None
    return {"announcements": int(last["seq"]) + 1, "span_s": span,
            "announcements_per_s": rate}


# ---- scale: the status views and balancer-manager at 1,000 members ----------------

MANAGER_NS = "{http://httpd.apache.org}"  # balancer-manager's XML elements
MEMBER_ROW = '<tr data-state="'  # one per member in the status page's table


def html_members(body):
    """How many member rows /beacon-status (HTML) lists; Broken without its
    members table (not the status page)."""
    if '<table class="members">' not in body:
        raise Broken("/beacon-status has no members table")
    return body.count(MEMBER_ROW)


def metrics_members(body):
    """How many beacon_member_info samples /beacon-status?metrics has, one
    per member; Broken without the family."""
    if "# TYPE beacon_member_info " not in body:
        raise Broken("/beacon-status?metrics has no beacon_member_info family")
    return len(re.findall(r"^beacon_member_info\{", body, re.M))


def json_members(body):
    """How many members the first receiver of /beacon-status?json lists."""
    return len(receiver_status(body)["members"])


def manager_members(xml_text, balancer="cluster"):
    """{worker name: set of status flags} of balancer://NAME in
    balancer-manager's ?xml=1 view; Broken when it is not XML or lists no
    such balancer."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise Broken(f"balancer-manager?xml=1 is not XML: {e}") from None
    for b in root.iter(MANAGER_NS + "balancer"):
        if b.findtext(MANAGER_NS + "name") == f"balancer://{balancer}":
            return {w.findtext(MANAGER_NS + "name"):
                    set((w.findtext(MANAGER_NS + "status") or "").split())
                    for w in b.iter(MANAGER_NS + "worker")}
    raise Broken(f"balancer-manager?xml=1 lists no balancer://{balancer}")


def in_rotation(workers, urls):
    """How many of urls are workers that are Ok and not disabled (of
    manager_members())."""
    return sum(1 for u in urls if u in workers and "Ok" in workers[u]
               and "Dis" not in workers[u])


TIME_WAIT_S = 60  # Linux's TCP_TIMEWAIT_LEN: a closed socket's stay in time-wait
_TIMER_UNITS = {"ms": 1e-3, "sec": 1.0, "min": 60.0}


def closed_to(ss_text, port, within):
    """How many rows of `ss -tnoH state time-wait` have peer port `port`
    and entered time-wait in the last `within` seconds (their timer shows
    more than TIME_WAIT_S - within left): connections to port that this
    side closed meanwhile (the proxy closing a backend connection; a
    backend's own close leaves its time-wait on the backend's side).
    Broken by a row without a peer address or a timewait timer."""
    n = 0
    for line in ss_text.splitlines():
        f = line.split()
        if not f:
            continue
        # an expiring one shows no time: "timer:(timewait,,0)"
        m = re.search(r"timer:\(timewait,(?:([\d.]+)(ms|sec|min))?,", line)
        if len(f) < 4 or ":" not in f[3] or not m:
            raise Broken(f"ss printed a row without a peer address or timer: {line[:80]!r}")
        left = float(m.group(1)) * _TIMER_UNITS[m.group(2)] if m.group(1) else 0.0
        n += f[3].rsplit(":", 1)[1] == str(port) and left > TIME_WAIT_S - within
    return n


# ---- load: backends' mod_status, the factors in force, HAProxy's weights --------

def status_auto(text):
    """mod_status's /server-status?auto: {field: number} of its numeric
    lines (Total Accesses, BusyWorkers, IdleWorkers...); Broken without
    Total Accesses or BusyWorkers (ExtendedStatus off, not mod_status)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        try:
            out[key.strip()] = float(value) if "." in value else int(value)
        except ValueError:
            continue
    for k in ("Total Accesses", "BusyWorkers"):
        if k not in out:
            raise Broken(f"/server-status?auto has no {k}: {text.strip()[:80]!r}")
    return out


def haproxy_weight(reply):
    """(current, initial) of the runtime API's `get weight be/s`: "55
    (initial 100)"; Broken on anything else (no such server...)."""
    m = re.match(r"\s*(\d+) \(initial (\d+)\)", reply)
    return (int(m.group(1)), int(m.group(2))) if need(m, f"HAProxy's get weight said "
                                                         f"{reply.strip()[:80]!r}") else None


def spread(values, what):
    """{min, max, median, spread} of values, spread = (max - min) / median;
    Broken with no value or a median of 0."""
    xs = sorted(need(values, f"no sample of {what}"))
    med = statistics.median(xs)
    if not med:
        raise Broken(f"{what}: median 0")
    return {"min": xs[0], "max": xs[-1], "median": med, "spread": (xs[-1] - xs[0]) / med}


# ---- load: a cold member joins (bench/load_join.py); 1,000 members reporting load ---

SLOW_START_RE = r"^\[([^\]]+)\] .*BCN00225: slow start of (\S+) in balancer://"
BACKEND_STATS_KEYS = ("requests", "cold_requests", "cold_done", "first_at", "cold_done_at",
                      "in_flight")


def slow_starts(text):
    """{url: epoch seconds} of the slow starts an error log announces
    (BCN00225, at info): none is a figure (no member ramped), not BROKEN."""
    return log_times(text, SLOW_START_RE)


def backend_stats(body):
    """The cold join's backend's GET /stats (bench/load_join.py): requests
    it began, its cold phase's length and how many of it are done, when
    the first began and when the cold phase ended (epoch seconds, null
    until then), requests it holds (queued or served) now. Broken when it is not JSON or a field is absent."""
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise Broken(f"the backend's /stats is not JSON: {e}") from None
    missing = [k for k in BACKEND_STATS_KEYS if k not in doc]
    if missing:
        raise Broken(f"the backend's /stats has no {', '.join(missing)}")
    return doc


def member_factors(status):
    """{url: {lbfactor, lbfactor_announced, slow_start}} of the members of
    a /beacon-status?json receiver: the factor in force (httpd's), the one
    announced, a slow start's share in % (None when none runs). Broken when
    a member has none of these fields."""
    out = {}
    for m in status["members"]:
        missing = [k for k in ("url", "lbfactor", "lbfactor_announced", "slow_start")
                   if k not in m]
        if missing:
            raise Broken(f"/beacon-status?json's member has no {', '.join(missing)}")
        out[m["url"]] = {k: m[k] for k in ("lbfactor", "lbfactor_announced", "slow_start")}
    return out


def factors_changed(a, b):
    """How many members of both member_factors() readings a and b have
    another factor in force in b."""
    return sum(1 for u, m in b.items() if u in a and a[u]["lbfactor"] != m["lbfactor"])
