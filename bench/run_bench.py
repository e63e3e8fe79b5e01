#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""End-to-end benchmarks of mod_proxy_beacon; `make bench` runs this.

    /usr/bin/python3 bench/run_bench.py [--quick] [--only a,b] [--build DIR]

Sections (all by default, --only picks some):

  request      throughput and latency (wrk) through the proxy, beacon-managed
               members vs static BalancerMembers, interleaved rounds
  control      datagrams/s the receiver drains and verifies without kernel
               drops, forged and valid (bench/flood.c), and that a live
               backend loses no announcement during a forged flood
  convergence  join latency (first datagram -> first request served) vs the
               same join through HAProxy's runtime API; eviction latency
  footprint    memory of the proxy with 100 members, with and without the
               module; receiver CPU per 1,000 announcements
  library      bench_datagram: ns per valid / forged datagram, SipHash
  churn        join into a recycled growth slot vs a free one; wrk through 50
               members with and without 10 membership changes/s; a rolling
               replacement of 10 members under load, failed requests counted
  fanout       announcements/s beaconctl send fans out to 1 name x 64
               addresses; a new address in the name -> that proxy has the
               member (the module's sender), median of trials. Needs root
               (a private /etc/hosts: tests/integration/private_hosts.py)
  services     the control section's forged flood against a receiver (one UDP
               port) feeding 20 balancers, one per service with its own key,
               vs one: the rate it keeps with 20 services / with one
  routing      req/s of requests routed by an announced context vs the same
               members through a static ProxyPass, with 10 and 1,000 contexts
               in the route table; a new context's datagram -> its first
               routed response
  scale        1,000 members in one balancer (ProxyBeaconBalancer slots=) vs
               1,000 static BalancerMembers on the same backends: req/s, a
               join at 1,000 members vs at 10, receiver CPU, the status
               views, memory per member, restore after a restart
  load         balancing by the load backends report (issue 34): a fleet of
               three backends, one of half the capacity, behind static
               members (byrequests, bybusyness), beacon members announcing
               `ProxyBeaconLBFactor auto` and HAProxy (leastconn +
               agent-check): req/s, p50, p99, requests per backend; the
               factor in force under a constant load; a cold member joining
               a saturated balancer with and without a slow start (p99 of
               its first 10 s); receiver CPU with 1,000 members reporting a
               factor that changes every second vs a constant one

Benchmarks report, they never fail: a missed goal is marked MISSED in the
table and the exit status is still 0. A measurement that found no data (a
log line, a JSON field or a tool's output it reads is not there: the
figure would be made up) is marked BROKEN, with the reason, in the goals
and in its section; the figures come from bench/extract.py, which
tests/bench checks against recorded output. A section that cannot run (wrk
or haproxy missing, say: `make deps BENCH=1` installs them, nothing here
does) says why in the table. The table goes to stdout and to
bench/results/latest.txt (raw figures: latest.json), each written to a
temporary file first so a crashed run keeps the last result.

Everything runs on the loopback (127.0.0.1; fan-out also 127.0.1.x and
127.0.2.x, scale 127.0.99.x-127.0.103.x), every wait is a bounded poll, and only the processes started
here are stopped, by pid. --quick (about two minutes) is a smoke
run: too short for figures worth quoting.
"""

import argparse
import collections
import contextlib
import http.client
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in bench/ or tests/
# run as a script, this module is __main__: the section modules that
# `import run_bench` (bench/load_*.py) get this one, not a second copy
sys.modules.setdefault("run_bench", sys.modules[__name__])
import benchlib as bl  # noqa: E402
import extract as ex  # noqa: E402
from extract import Broken  # noqa: E402
import private_hosts  # noqa: E402  (tests/integration, on benchlib's path)

SECTIONS = ("library", "request", "control", "convergence", "footprint", "churn",
            "fanout", "services", "routing", "scale", "load")


class Skip(Exception):
    """A section that cannot run here; the message says why."""


BROKEN = "broken"  # a goal's `met` when its measurement found no data


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def fmt(v, spec=".1f", none="-"):
    return none if v is None else format(v, spec)


def rng(values, spec=".1f", scale=1.0):
    if not values:
        return "-"
    return f"{min(values) * scale:{spec}}-{max(values) * scale:{spec}}"


class Ctx:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.build = (bl.REPO / args.build).resolve()
        self.module = str(self.build / ".libs" / "mod_proxy_beacon.so")
        self.dir = Path(tempfile.mkdtemp(prefix="beacon-bench-"))
        self.dir.chmod(0o755)
        self.servers = []
        self.raw = {}
        self.goals = []      # (section, goal, met: True/False/None, detail)
        self.notes = []
        self.flood = None
        self.flood_error = None
        self._site = None

    def track(self, server):
        self.servers.append(server)
        return server

    def stop_all(self):
        for s in reversed(self.servers):
            err = bl.stop_quietly(s)
            if err:
                self.notes.append(err)
        self.servers = []
        self._site = None

    def goal(self, section, text, met, detail):
        self.goals.append((section, text, met, detail))

    def broken(self, section, reason):
        """A measurement that found no data: BROKEN among the goals; the
        line for the section's table."""
        self.goals.append((section, f"{section}: a measurement found no data", BROKEN,
                           reason))
        return f"   BROKEN: {reason}"

    def figure(self, section, fn, *args):
        """fn(*args), an extraction; None, recorded as BROKEN, if it found
        no data: for the figures a section reports beside others."""
        try:
            return fn(*args)
        except Broken as e:
            self.broken(section, str(e))
            return None

    def site(self, n=104):
        """A shared static backend with n ports (names n0, n1, ...)."""
        if self._site is None or len(self._site.ports) < n:
            self._site = self.track(bl.Site(self.dir / f"site{len(self.servers)}",
                                            [f"n{i}" for i in range(n)]))
            self._site.start()
        return self._site

    def check_log(self, proxy, label):
        bad = bl.error_lines(proxy.error_log())
        if bad:
            self.notes.append(f"{label}: {len(bad)} error line(s) in {proxy.error_log_path},"
                              f" e.g. {bad[0][:200]}")
        return len(bad)


# ---- helpers ---------------------------------------------------------------------

def wait_members(proxy, urls, timeout=20):
    """Wait until every url is an enabled member of balancer://cluster."""
    want = set(urls)

    def ok():
        have = {w["name"] for w in proxy.members()
                if "Ok" in w["flags"] and "Dis" not in w["flags"]}
        return want <= have
    bl.wait_for(ok, timeout, f"{len(want)} members enabled", interval=0.05)


def serves_all(port, names, tries=200, path=bl.FILE_PATH):
    """GETs path until each backend in names has answered; False if not."""
    seen, p = set(), bl.Poller(port, path)
    try:
        for _ in range(tries):
            status, body = p.get()
            if status == 200:
                seen.add(bl.body_name(body))
            if seen >= set(names):
                return True
    finally:
        p.close()
    return False


def find_flood(ctx):
    """bench/flood.c is built by cmake with the rest (target bench_flood)."""
    out = ctx.build / "bench_flood"
    if out.exists():
        ctx.flood = str(out)
    else:
        ctx.flood_error = f"{out} is missing: run make build first"


def missing_tool(name):
    """None when name is on PATH, else how to get it. Nothing is installed
    here: `make deps BENCH=1` (as root) installs wrk and haproxy."""
    if shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin"):
        return None  # haproxy is in /usr/sbin, which a user's PATH may lack
    return f"not installed; as root: make deps BENCH=1, or apt-get install -y {name}"


def flood(ctx, port, mode, seconds, rate=0, count=0, urls_file=None, batch=64,
          services=()):
    """bench_flood's figures; services: the svc= its datagrams name in turn."""
    if not ctx.flood:
        raise Skip(ctx.flood_error or "no flood sender")
    cmd = [ctx.flood, "--port", str(port), "--mode", mode, "--seconds", str(seconds),
           "--batch", str(batch)]
    if rate:
        cmd += ["--rate", str(rate)]
    if count:
        cmd += ["--count", str(count)]
    if urls_file:
        cmd += ["--urls-file", str(urls_file)]
    for svc in services:
        cmd += ["--svc", svc]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if r.returncode != 0:
        raise RuntimeError(f"bench_flood failed: {r.stderr}")
    bl.record("flood.txt", r.stdout)
    return ex.flood_figures(r.stdout)


# ---- 5. library --------------------------------------------------------------------

def bench_library(ctx):
    exe = ctx.build / "bench_datagram"
    if not exe.is_file():
        raise Skip(f"{exe} is not built (make build)")
    args = ["3", "50000"] if ctx.quick else []
    r = subprocess.run([str(exe)] + args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"bench_datagram exited {r.returncode}: {r.stderr}")
    ctx.raw["library"] = r.stdout
    bl.record("bench_datagram.txt", r.stdout)
    ns = ex.library_figures(r.stdout)
    lines = ["   " + l for l in r.stdout.rstrip().splitlines()
             if l.strip() and not l.startswith("machine:")]
    lines.append(f"   SipHash share: {100 * ns['c'] / ns['a']:.0f}% of a valid datagram, "
                 f"{100 * ns['c'] / ns['b']:.0f}% of a forged one")
    lines += member_key_lines(ctx, ns, ex.library_deltas(r.stdout))
    return lines


MEMBER_KEY_GROWTH = 150  # ns a master may add to a valid datagram (issue 36)


def member_key_lines(ctx, ns, d):
    """Where a member key's time goes, and the goal: a valid datagram under a
    master costs at most MEMBER_KEY_GROWTH ns more than under a shared key
    (f - e, run by run). Under a master the MAC is still one; what it adds
    is the canonical-url check (l) and the derivation (g)."""
    growth = d["f-e"]
    lines = [f"   member keys (wire format 1.3): a valid datagram +{growth:.0f} ns under a master "
             f"(f - e); of it the derivation (g) {fmt(ns.get('g'), '.0f')} ns and the "
             f"canonical-url check (l) {fmt(ns.get('l'), '.0f')} ns, the MAC (c) being one "
             "either way",
             f"   forged: +{fmt(d.get('i-h'), '.0f')} ns under a master (i - h), a second master "
             f"+{fmt(d.get('j-i'), '.0f')} ns more (j - i); 256 revoked urls "
             f"{fmt(d.get('k-f'), '+.0f')} ns on a valid datagram (k - f)"]
    if ns.get("h") and ns.get("i"):
        lines.append(f"   forged datagrams per second in the library alone, master / shared key: "
                     f"{ns['h'] / ns['i']:.2f} (h / i; the receiver's own costs come on top: "
                     "2. control, b)")
    ctx.goal("library", f"a valid datagram under a master costs <= {MEMBER_KEY_GROWTH} ns more "
             "than under a shared key", growth <= MEMBER_KEY_GROWTH,
             f"+{growth:.0f} ns (f - e, median of the runs' differences: {fmt(ns.get('e'), '.0f')}"
             f" -> {fmt(ns.get('f'), '.0f')} ns); derivation {fmt(ns.get('g'), '.0f')} ns, "
             f"canonical-url check {fmt(ns.get('l'), '.0f')} ns")
    return lines


# ---- 1. request path ---------------------------------------------------------------

def bench_request(ctx):
    why = missing_tool("wrk")
    if why:
        raise Skip(f"wrk missing ({why})")
    rounds, secs = (1, 2) if ctx.quick else (5, 10)
    warm = 1 if ctx.quick else 3
    threads, conns = 2, 32
    sites = [ctx.track(bl.Site(ctx.dir / f"req-backend{i}", [f"b{i}"])).start()
             for i in range(2)]
    urls = [s.member_url(0) for s in sites]
    names = [s.names[0] for s in sites]
    static = ctx.track(bl.Proxy(ctx.dir / "req-static", members=urls)).start()
    udp = bl.free_port()
    beacon = ctx.track(bl.Proxy(ctx.dir / "req-beacon", module=ctx.module,
                                receiver=(udp, "5"))).start_receiver()
    sender = bl.Sender(udp)
    hb = bl.Heartbeat(sender, urls, 1.0).start()
    try:
        wait_members(beacon, urls)
        for p, label in ((static, "static"), (beacon, "beacon")):
            if not serves_all(p.port, names):
                raise RuntimeError(f"{label} proxy does not reach both backends")
        for p in (static, beacon):
            bl.run_wrk(p.port, warm, threads, conns)
        runs = {"static": [], "beacon": []}
        for r in range(rounds):
            order = [("static", static), ("beacon", beacon)]
            if r % 2:
                order.reverse()
            for label, p in order:
                log(f"request: round {r + 1}/{rounds} {label}")
                res = bl.run_wrk(p.port, secs, threads, conns)
                res.pop("raw")
                runs[label].append(res)
    finally:
        hb.stop()
        sender.close()
    ctx.raw["request"] = runs
    errs = {k: sum(x["non2xx"] + x["socket_errors"] for x in v) for k, v in runs.items()}
    ctx.check_log(static, "request/static proxy")
    ctx.check_log(beacon, "request/beacon proxy")

    def col(label, key):
        return [x[key] for x in runs[label] if x[key] is not None]
    med = {k: bl.median(col(k, "rps")) for k in runs}
    p99 = {k: bl.median(col(k, "p99")) for k in runs}
    ratio = med["beacon"] / med["static"]
    paired = [b["rps"] / s["rps"] for s, b in zip(runs["static"], runs["beacon"])]
    p99_ratio = p99["beacon"] / p99["static"] if p99["static"] else None
    lines = [f"   wrk -t{threads} -c{conns} -d{secs}s --latency GET /f (100-byte file), "
             f"2 backend apache2, {rounds} round(s) alternating order",
             f"   {'':28}{'req/s median (range)':>28}{'p99 ms median (range)':>26}"
             f"{'p50 ms':>9}{'errors':>8}"]
    for label, title in (("static", "static BalancerMembers"),
                         ("beacon", "beacon-managed members")):
        lines.append(f"   {title:28}{fmt(med[label], '.0f'):>10} ({rng(col(label, 'rps'), '.0f')})"
                     .ljust(59)
                     + f"{fmt(p99[label], '.2f'):>8} ({rng(col(label, 'p99'), '.2f')})".ljust(26)
                     + f"{fmt(bl.median(col(label, 'p50')), '.2f'):>9}{errs[label]:>8}")
    lines.append(f"   {'beacon/static':28}{ratio:>10.3f} (per round {rng(paired, '.3f')})"
                 .ljust(59) + f"{fmt(p99_ratio, '.3f'):>8} (p99 beacon/static)")
    ctx.goal("request", "req/s beacon/static >= 0.98", ratio >= 0.98,
             f"{ratio:.3f} (rounds {rng(paired, '.3f')})")
    return lines


# ---- 2. control path ---------------------------------------------------------------

def receiver_socket(port):
    s = bl.udp_socket(port)
    if s is None:
        raise Broken(f"no UDP socket on 127.0.0.1:{port} in /proc/net/udp")
    return s


def snapshot(proxy, pid, hb=None):
    """Counters at a quiet moment: the socket drained, the heartbeat held.
    With hb (V's heartbeat): also the receiver's /beacon-status?json, whose
    events.accepted counts V's accepted announcements, and the ts of the
    last announcement V sent."""
    port = proxy.udp_port
    bl.wait_for(lambda: receiver_socket(port)["rx_queue"] == 0, 10, "receiver to drain",
                interval=0.005)
    time.sleep(0.05)  # the last datagram dequeued is handled and counted
    s = receiver_socket(port)
    return {"t": time.monotonic(), "drops": s["drops"], "snmp": bl.udp_snmp(),
            "cpu": bl.cpu_seconds(pid), "hb": hb.sent if hb else 0,
            "status": proxy.beacon_status() if hb else None,
            "v_last_ts": hb.sender.last_ts if hb else None}


def flood_run(ctx, proxy, pid, mode, seconds, rate=0, urls_file=None, hb=None,
              services=()):
    """One flood against the receiver: what was sent, what the kernel
    dropped, how fast the receiver kept up, and its CPU time; with hb, how
    many of V's announcements the receiver accepted (its counter);
    services: the svc= the datagrams name in turn."""
    port = proxy.udp_port

    def consistent_snapshot():
        # the heartbeat thread must not send between the two reads
        with hb.lock if hb else contextlib.nullcontext():
            return snapshot(proxy, pid, hb)

    a = consistent_snapshot()
    f = flood(ctx, port, mode, seconds, rate=rate, urls_file=urls_file, services=services)
    drained = True
    try:
        bl.wait_for(lambda: receiver_socket(port)["rx_queue"] == 0, 10,
                    "receiver to drain", interval=0.002)
    except AssertionError:
        drained = False
    t_drained = time.monotonic()
    b = consistent_snapshot()
    sent = int(f["sent"])
    drops = b["drops"] - a["drops"]
    res = {"mode": mode, "target_rate": rate, "sent": sent, "send_rate": f["rate"],
           "send_seconds": f["seconds"], "send_errors": int(f.get("send_errors", 0)),
           "drops": drops, "drained": drained,
           "snmp_rcvbuf_errors": b["snmp"]["RcvbufErrors"] - a["snmp"]["RcvbufErrors"],
           "snmp_in_errors": b["snmp"]["InErrors"] - a["snmp"]["InErrors"]}
    res.update(ex.receiver_load(sent - drops, t_drained - a["t"], b["cpu"] - a["cpu"]))
    if hb:
        res["v_sent"] = b["hb"] - a["hb"]
        v = ex.v_accepted(a["status"], b["status"], hb.urls[0], b["v_last_ts"])
        res["v_accepted"], res["v_last_kept"] = v["accepted"], v["last_kept"]
    return res


def control_lines(runs, label):
    lines = []
    for r in runs:
        target = f"{r['target_rate'] / 1000:.0f}k/s" if r["target_rate"] else "max"
        v = ""
        if "v_accepted" in r:
            v = (f"  V {r['v_accepted']}/{r['v_sent']}"
                 + ("" if r["v_last_kept"] else " (its last one not kept)"))
        lines.append(f"   {label:7}{target:>7}{r['send_rate']:>11.0f}{r['sent']:>10}"
                     f"{r['drops']:>9}{r['snmp_rcvbuf_errors']:>9}{r['kept_rate']:>11.0f}"
                     f"{100 * r['cpu_share']:>7.0f}%{r['us_per_dgram']:>10.2f}{v}")
    return lines


def sink_run(ctx, rate, seconds, batch):
    """CPU per datagram of a bare receive loop (bench_flood --mode sink)."""
    port = bl.free_port()
    proc = subprocess.Popen([ctx.flood, "--mode", "sink", "--port", str(port),
                             "--seconds", str(seconds + 1.5), "--batch", str(batch)],
                            stdout=subprocess.PIPE, text=True)
    try:
        bl.wait_for(lambda: bl.udp_socket(port), 5, "the sink to bind")
        f = flood(ctx, port, "forged", seconds, rate=rate)
        out = proc.communicate(timeout=seconds + 30)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    bl.record("sink.txt", out)
    r = ex.sink_figures(out)
    return {"sent": f["sent"], "received": r["received"], "cpu_seconds": r["cpu_seconds"],
            "us_per_dgram": r["us_per_dgram"]}


def best_clean(runs):
    clean = [r["kept_rate"] for r in runs if r["drops"] == 0 and r["target_rate"]]
    return max(clean) if clean else None


def bench_control(ctx):
    if not ctx.flood:
        raise Skip(ctx.flood_error or "no flood sender")
    if ctx.quick:
        ladder, step, max_secs = [200_000], 1.5, 1.5
    else:
        ladder, step, max_secs = [100_000, 200_000, 300_000, 400_000], 3, 5
    site = ctx.site()
    v_url = site.member_url(0)
    fleet = [site.member_url(1 + i) for i in range(50)]
    urls_file = ctx.dir / "fleet.txt"
    urls_file.write_text("\n".join(fleet) + "\n")
    out = {}

    # forged: V is the only valid sender, so the receiver's counter of
    # accepted announcements (/beacon-status?json) counts V's
    udp = bl.free_port()
    p = ctx.track(bl.Proxy(ctx.dir / "ctl-forged", module=ctx.module, growth=64,
                           receiver=(udp, "2"), status_page=True)).start_receiver()
    sender = bl.Sender(udp)
    sender.announce(v_url)
    wait_members(p, [v_url])
    pid = p.receiver_pid()
    rb = bl.udp_socket_buffer(udp)
    hb = bl.Heartbeat(sender, [v_url], 0.5).start()
    forged = []
    try:
        for rate in ladder:
            log(f"control: forged at {rate}/s")
            forged.append(flood_run(ctx, p, pid, "forged", step, rate, hb=hb))
        log("control: forged, as fast as possible")
        forged.append(flood_run(ctx, p, pid, "forged", max_secs, hb=hb))
    finally:
        hb.stop()
        sender.close()
    v_ok = "Dis" not in [w for w in p.members() if w["name"] == v_url][0]["flags"]
    v_evicted = len([u for u in re.findall(ex.EVICTED_RE, p.log_text("forged-error.log"))
                     if u == v_url])
    out["forged"] = forged
    out["v_enabled"], out["v_evictions"] = v_ok, v_evicted
    ctx.check_log(p, "control/forged proxy")
    bl.stop_quietly(p)

    # valid: re-announcements of a fixed fleet of 50 members
    udp = bl.free_port()
    p = ctx.track(bl.Proxy(ctx.dir / "ctl-valid", module=ctx.module, growth=64,
                           receiver=(udp, "30"), status_page=True)).start_receiver()
    sender = bl.Sender(udp)
    for u in fleet:
        sender.announce(u)
    bl.wait_for(lambda: p.count_log(r"BCN00030: added backend") >= len(fleet), 20,
                "50 members added")
    sender.close()
    pid = p.receiver_pid()
    valid = []
    for rate in ladder:
        log(f"control: valid at {rate}/s")
        valid.append(flood_run(ctx, p, pid, "valid", step, rate, urls_file=urls_file))
    log("control: valid, as fast as possible")
    valid.append(flood_run(ctx, p, pid, "valid", max_secs, urls_file=urls_file))
    out["valid"] = valid
    ctx.check_log(p, "control/valid proxy")
    bl.stop_quietly(p)

    # calibration: what a bare receive loop costs here, same sender, same rate
    calib = {}
    for batch in (1, 64):
        calib[batch] = sink_run(ctx, 200_000, step, batch)
    out["calibration"] = calib
    ctx.raw["control"] = out

    lines = [f"   bench_flood (C, sendmmsg) -> receiver on 127.0.0.1; {step:g} s per paced "
             f"rate, {max_secs:g} s unpaced; receive buffer {rb}",
             "   drops = the socket's drop counter (/proc/net/udp); kept = (sent - drops)"
             " / time until the socket drained;",
             "   cpu = the receiver child's CPU time (schedstat, all threads) / that time; us/dgram = cpu / kept; "
             "V = a live member announcing every 500 ms:",
             "   accepted (the receiver's events.accepted, /beacon-status?json; V is the only "
             "valid sender) / sent",
             f"   {'':7}{'target':>7}{'sent/s':>11}{'sent':>10}{'drops':>9}{'RcvbufE':>9}"
             f"{'kept/s':>11}{'cpu':>8}{'us/dgram':>10}"]
    lines += control_lines(forged, "forged")
    lines += control_lines(valid, "valid")
    lines.append(f"   highest paced rate with no drop: forged {fmt(best_clean(forged), '.0f')}/s,"
                 f" valid {fmt(best_clean(valid), '.0f')}/s; unpaced kept up with forged "
                 f"{forged[-1]['kept_rate']:.0f}/s, valid {valid[-1]['kept_rate']:.0f}/s")
    at200 = {r["mode"]: r["us_per_dgram"] for r in forged + valid
             if r["target_rate"] == 200_000}
    if at200:
        us = max(at200.values())
        lines.append("   receiver CPU at 200k/s: "
                     + ", ".join(f"{m} {v:.2f}" for m, v in at200.items())
                     + f" us/datagram, i.e. about {1e6 / us / 1000:.0f}k/s on a core of its own")
    c64, c1 = calib.get(64, {}), calib.get(1, {})
    lines.append(f"   floor: the same sender into a bare poll + recvmmsg(64) loop like the "
                 f"receiver's, verifying nothing (bench_flood --mode sink), 200k/s: "
                 f"{fmt(c64.get('us_per_dgram'), '.2f')} us/datagram "
                 f"(with one recvfrom per datagram: {fmt(c1.get('us_per_dgram'), '.2f')})")
    lines.append(f"   V after the forged floods: {'enabled' if v_ok else 'DISABLED'}, "
                 f"evicted {v_evicted} time(s)")
    control_goal(ctx, forged, v_ok)
    return lines + run_parts(ctx, "control", (("b) derived keys", control_derive, (ctx,)),))


def control_goal(ctx, forged, v_ok):
    """The goal, from the forged run at 200,000/s: no drop, and V lost
    nothing (accepted, by the receiver's counter, all it sent, the last
    one kept). A run in which V sent nothing measures nothing: BROKEN."""
    g = next((r for r in forged if r["target_rate"] == 200_000), None)
    if g is None:
        ctx.broken("control", "no forged run at 200,000/s")
        return
    if not g["v_sent"]:
        ctx.broken("control", "V sent no announcement during the forged flood at 200,000/s")
        return
    lost = g["v_sent"] - g["v_accepted"]
    met = (g["drops"] == 0 and lost == 0 and g["v_last_kept"]
           and g["send_rate"] >= 195_000 and v_ok)
    ctx.goal("control", ">= 200,000 forged/s on one core, no valid announcement lost",
             met, f"sent {g['send_rate']:.0f}/s, {g['drops']} dropped, receiver cpu "
             f"{100 * g['cpu_share']:.0f}% of a core, V lost {lost} (accepted "
             f"{g['v_accepted']} of {g['v_sent']}"
             f"{'' if g['v_last_kept'] else ', its last one not kept'}), "
             f"V {'enabled' if v_ok else 'DISABLED'}")


def take_turns(ctx, setups, rates, step, max_secs, what):
    """A forged flood at each of rates (0: unpaced, max_secs long; else step
    long) against each of setups ({key: {proxy, pid, runs[, services]}}),
    the proxies taking turns, the first alternating: drift in the
    machine's load falls on all. Each run is appended to its setup's
    runs; what(key) names it in the log."""
    keys = list(setups)
    for i, rate in enumerate(rates):
        for k in (keys if i % 2 == 0 else keys[::-1]):
            s = setups[k]
            log(f"{what(k)}, " + (f"at {rate}/s" if rate else "as fast as possible"))
            s["runs"].append(flood_run(ctx, s["proxy"], s["pid"], "forged",
                                       step if rate else max_secs, rate,
                                       services=s.get("services", ())))


# ---- 2. control, b) derived keys (issue 36) ----------------------------------------

DERIVE_GOAL = 0.8  # forged drops/s, derived-key receiver / shared-key receiver
MASTER = "hex:5a0f1e2d3c4b69788796a5b4c3d2e1f0"  # the derived-key receiver's master


def member_key(ctx, master, url):
    """The member key `beaconctl derive-key` issues for url (no service)
    under master, as hex:."""
    r = subprocess.run([str(ctx.build / "beaconctl"), "derive-key", "--url", url],
                       env={**os.environ, "BEACON_SECRET": master}, capture_output=True,
                       text=True, timeout=30)
    keys = [w for w in r.stdout.split() if w.startswith("hex:")]
    if r.returncode != 0 or len(keys) != 1:
        raise RuntimeError(f"beaconctl derive-key exited {r.returncode}: "
                           f"{(r.stderr or r.stdout).strip()[:200]}")
    return keys[0]


def key_proxy(ctx, label, secret, key):
    """A receiver whose ProxyBeaconSecret is secret, with /beacon-status;
    before any flood, a valid announcement signed with key (what a member
    of it holds) must join: the receiver verifies as configured."""
    udp = bl.free_port()
    p = ctx.track(bl.Proxy(ctx.dir / f"ctl-{label}", module=ctx.module, growth=2,
                           receiver=(udp, "300"), secret=secret,
                           status_page=True)).start_receiver()
    sender = bl.Sender(udp, secret=key)
    sender.announce(PROBE_URL)
    sender.close()
    wait_members(p, [PROBE_URL])
    return {"proxy": p, "pid": p.receiver_pid(), "runs": [],
            "before": ex.dropped_totals(p.beacon_status_body(f"before-{label}.json"))}


def control_derive(ctx):
    """The forged flood (bench_flood's default url, canonical, no svc=)
    against a receiver whose default set is a master (derive:) and one with
    a shared key, taking turns: under the master each datagram's member key
    is derived before its MAC. Every datagram delivered must be counted as
    mac mismatch, or the flood measured another drop."""
    if ctx.quick:
        ladder, step, max_secs, rounds = [200_000], 1, 1.5, 1
    else:
        ladder, step, max_secs, rounds = [100_000, 200_000, 300_000, 400_000], 2, 3, 3
    setups = {"shared": key_proxy(ctx, "shared", bl.SECRET, bl.SECRET),
              "derived": key_proxy(ctx, "derived", "derive:" + MASTER,
                                   member_key(ctx, MASTER, PROBE_URL))}
    take_turns(ctx, setups, ladder + [0] * rounds, step, max_secs,
               lambda k: f"control: forged, {k}-key receiver")
    counted = {}
    for k, s in setups.items():
        delivered = sum(r["sent"] - r["send_errors"] - r["drops"] for r in s["runs"])
        after = ex.dropped_totals(s["proxy"].beacon_status_body(f"{k}.json"))
        counted[k] = ({r: n - s["before"].get(r, 0) for r, n in after.items()
                       if n != s["before"].get(r, 0)}, delivered)
        ctx.check_log(s["proxy"], f"control/{k}-key proxy")
    shared, derived = setups["shared"]["runs"], setups["derived"]["runs"]
    ctx.raw["control_derive"] = {k: {"runs": s["runs"], "dropped": counted[k][0],
                                     "delivered": counted[k][1]} for k, s in setups.items()}
    lines = ["   b) derived keys (issue 36): the same forged flood (url=http://127.0.0.1:9, "
             "canonical, no svc=) against two",
             "   receivers taking turns: ProxyBeaconSecret derive:hex:... (each datagram's "
             "member key derived, then its MAC) and hex:...;",
             f"   {step:g} s per paced rate, {max_secs:g} s unpaced x {rounds}; columns as above",
             f"   {'':7}{'target':>7}{'sent/s':>11}{'sent':>10}{'drops':>9}{'RcvbufE':>9}"
             f"{'kept/s':>11}{'cpu':>8}{'us/dgram':>10}"]
    lines += control_lines(shared, "shared")
    lines += control_lines(derived, "derived")
    lines += derive_summary(shared, derived, counted)
    derive_goal(ctx, shared, derived, counted)
    return lines


def drops_text(dropped):
    return ", ".join(f"{r} {n}" for r, n in sorted(dropped.items())) or "none"


def pair_figures(a, b):
    """The figures two receivers' forged runs are compared by: for each,
    the highest paced rate with no drop, the median unpaced kept-up rate
    and CPU per datagram; and b / a of the unpaced rounds, paired."""
    def cpu(runs):
        return bl.median([r["us_per_dgram"] for r in runs if not r["target_rate"]])
    return (best_clean(a), best_clean(b), bl.median(unpaced(a)), bl.median(unpaced(b)),
            cpu(a), cpu(b), [y / x for x, y in zip(unpaced(a), unpaced(b)) if x])


def derive_summary(shared, derived, counted):
    bs, bd, us, ud, cs, cd, paired = pair_figures(shared, derived)
    return [f"   highest paced rate with no drop: shared {fmt(bs, '.0f')}/s, derived "
            f"{fmt(bd, '.0f')}/s",
            f"   unpaced forged drops/s kept up (median): shared {fmt(us, '.0f')}/s, derived "
            f"{fmt(ud, '.0f')}/s, ratio {fmt(ud / us if us and ud else None, '.3f')} "
            f"(rounds {rng(paired, '.3f')})",
            f"   receiver CPU per forged datagram, unpaced (median): shared {fmt(cs, '.2f')} us,"
            f" derived {fmt(cd, '.2f')} us (ratio {fmt(cs / cd if cs and cd else None, '.3f')}:"
            f" about {fmt(1e3 / cs if cs else None, '.0f')}k/s vs "
            f"{fmt(1e3 / cd if cd else None, '.0f')}k/s on a core of its own)",
            "   drops counted (?json dropped, all balancers) of those delivered: "
            + "; ".join(f"{k} {drops_text(d)} of {n}" for k, (d, n) in counted.items())]


def derive_goal(ctx, shared, derived, counted):
    """The goal: the unpaced forged rate a derived-key receiver keeps up
    (median of the rounds) >= DERIVE_GOAL x a shared-key one's, every
    datagram delivered to either counted as mac mismatch and as nothing
    else. BROKEN without an unpaced run of each, or when the shared-key
    receiver kept nothing."""
    us, ud = bl.median(unpaced(shared)), bl.median(unpaced(derived))
    if us is None or ud is None:
        ctx.broken("control", "no unpaced forged run against the shared- and derived-key "
                   "receivers")
        return
    if not us:
        ctx.broken("control", "the shared-key receiver kept no datagram")
        return
    ratio = ud / us
    miscounted = [f"{k} {drops_text(d)} of {n}" for k, (d, n) in counted.items()
                  if d != {"mac_mismatch": n}]
    detail = (f"ratio {ratio:.3f} ({ud:.0f} vs {us:.0f}/s unpaced kept up; highest paced with"
              f" no drop {fmt(best_clean(derived), '.0f')} vs {fmt(best_clean(shared), '.0f')}"
              "/s)")
    if miscounted:
        detail += "; not all counted as mac mismatch: " + "; ".join(miscounted)
    ctx.goal("control", f"the forged flood against a derived-key receiver keeps >= "
             f"{DERIVE_GOAL} of the rate of a shared-key one", ratio >= DERIVE_GOAL
             and not miscounted, detail)


# ---- 8. services -------------------------------------------------------------------

SERVICES = 20      # balancers on the one receiver, against one
SERVICES_GOAL = 0.9
PROBE_URL = "http://127.0.0.1:10"  # a valid announcement's, never requested


def services_proxy(ctx, n):
    """A proxy whose one receiver (one UDP port) feeds n balancers, one per
    service (s01..., each its own key), with /beacon-status; and the
    services. Before any flood, ?json must list each balancer, and a valid
    announcement for the last service, signed with its key, must join its
    balancer: the receiver selects keys by service as configured."""
    udp = bl.free_port()
    p = ctx.track(bl.Proxy(ctx.dir / f"svc-{n}", module=ctx.module, growth=2,
                           receiver=(udp, "300"), services=n,
                           status_page=True)).start_receiver()
    names = bl.service_names(n)
    listed = sorted(p.service_status(f"status-{n}.json"))
    if listed != [f"balancer://{s}" for s in names]:
        raise Broken(f"/beacon-status?json lists {len(listed)} balancers "
                     f"({', '.join(listed[:3])}), not the {n} configured")
    last = names[-1]
    sender = bl.Sender(udp, secret=bl.service_key(last))
    sender.send(sender.datagram(PROBE_URL, extra=[("svc", last)]))
    sender.close()
    bl.wait_for(lambda: PROBE_URL in [w["name"] for w in p.balancer_members(last)], 20,
                f"{PROBE_URL} to join balancer://{last}", interval=0.05)
    return p, names


def unpaced(runs):
    return [r["kept_rate"] for r in runs if not r["target_rate"]]


def bench_services(ctx):
    if not ctx.flood:
        raise Skip(ctx.flood_error or "no flood sender")
    if ctx.quick:
        ladder, step, max_secs, rounds = [200_000], 1, 1.5, 1
    else:
        ladder, step, max_secs, rounds = [100_000, 200_000, 300_000, 400_000], 2, 3, 3
    setups = {}
    for n in (1, SERVICES):
        p, names = services_proxy(ctx, n)
        setups[n] = {"proxy": p, "services": names, "pid": p.receiver_pid(),
                     "before": p.service_status(f"status-{n}.json"), "runs": []}
    take_turns(ctx, setups, ladder + [0] * rounds, step, max_secs,
               lambda n: f"services: forged, {n} service(s)")
    counted = {}
    for n, s in setups.items():
        delivered = sum(r["sent"] - r["send_errors"] - r["drops"] for r in s["runs"])
        after = s["proxy"].service_status(f"status-{n}.json")
        counted[n] = (ex.mac_mismatches(s["before"], after), delivered)
        ctx.check_log(s["proxy"], f"services/{n} proxy")
    one, many = setups[1]["runs"], setups[SERVICES]["runs"]
    ctx.raw["services"] = {n: {"runs": s["runs"], "mac_mismatch_counted": counted[n][0],
                               "delivered": counted[n][1]} for n, s in setups.items()}
    lines = [f"   bench_flood --mode forged -> one receiver (one UDP port) feeding 1 balancer "
             f"(service s01, its own key) or {SERVICES}",
             f"   (s01-s{SERVICES}, each its own key); the datagrams name the services in turn"
             " (svc=), which picks the keys before the MAC;",
             f"   {step:g} s per paced rate, {max_secs:g} s unpaced x {rounds}, the two proxies "
             "taking turns; columns as in 2.",
             f"   {'':7}{'target':>7}{'sent/s':>11}{'sent':>10}{'drops':>9}{'RcvbufE':>9}"
             f"{'kept/s':>11}{'cpu':>8}{'us/dgram':>10}"]
    lines += control_lines(one, "1 svc")
    lines += control_lines(many, f"{SERVICES} svc")
    lines += services_summary(one, many, counted)
    services_goal(ctx, one, many, counted)
    return lines


def services_summary(one, many, counted):
    b1, bn, u1, un, c1, cn, paired = pair_figures(one, many)
    return [f"   highest paced rate with no drop: 1 service {fmt(b1, '.0f')}/s, {SERVICES} "
            f"services {fmt(bn, '.0f')}/s, ratio {fmt(bn / b1 if b1 and bn else None, '.3f')}",
            f"   unpaced kept up (median): 1 service {fmt(u1, '.0f')}/s, {SERVICES} services "
            f"{fmt(un, '.0f')}/s, ratio {fmt(un / u1 if u1 and un else None, '.3f')} "
            f"(rounds {rng(paired, '.3f')})",
            f"   receiver CPU per forged datagram, unpaced (median): {fmt(c1, '.2f')} us vs "
            f"{fmt(cn, '.2f')} us, i.e. about {fmt(1e3 / c1 if c1 else None, '.0f')}k/s vs "
            f"{fmt(1e3 / cn if cn else None, '.0f')}k/s on a core of its own",
            "   counted as mac mismatch (?json dropped.mac_mismatch, all balancers) of those "
            "delivered: " + ", ".join(f"{n} service(s) {c} of {d}"
                                      for n, (c, d) in sorted(counted.items()))]


def services_goal(ctx, one, many, counted):
    """The goal: the unpaced kept-up rate with SERVICES services (median
    of the rounds) >= SERVICES_GOAL x the one with one service, every
    datagram delivered counted as mac mismatch (else the flood measured
    something else). BROKEN without an unpaced run of each, or when the
    one-service receiver kept nothing."""
    u1, un = bl.median(unpaced(one)), bl.median(unpaced(many))
    if u1 is None or un is None:
        ctx.broken("services", f"no unpaced forged run with 1 and {SERVICES} services")
        return
    if not u1:
        ctx.broken("services", "the receiver with one service kept no datagram")
        return
    ratio = un / u1
    miscounted = [f"{n} service(s) {c} of {d}" for n, (c, d) in sorted(counted.items())
                  if c != d]
    b1, bn = best_clean(one), best_clean(many)
    detail = (f"ratio {ratio:.3f} ({un:.0f} vs {u1:.0f}/s unpaced kept up; highest paced "
              f"with no drop {fmt(bn, '.0f')} vs {fmt(b1, '.0f')}/s)")
    if miscounted:
        detail += "; counted as mac mismatch of those delivered: " + ", ".join(miscounted)
    ctx.goal("services", f"the forged flood with {SERVICES} services on the receiver keeps "
             f">= {SERVICES_GOAL} of the rate with one", ratio >= SERVICES_GOAL
             and not miscounted, detail)


# ---- 3. convergence ----------------------------------------------------------------

def poll_until(poller, name, t0, timeout=5.0):
    """Polls until a response comes from `name`; seconds since t0, or None."""
    deadline = t0 + timeout
    polls = 0
    while time.monotonic() < deadline:
        t = time.monotonic()
        status, body = poller.get()
        polls += 1
        if status == 200 and bl.body_name(body) == name:
            now = time.monotonic()
            poller.last_rtt = now - t
            return now - t0, polls
    return None, polls


def bench_convergence(ctx):
    why = missing_tool("haproxy")
    trials = 5 if ctx.quick else 30
    timeout = 1.0
    tail = 0.25  # how long to keep polling after the lease lapsed
    site = ctx.site(max(104, trials + 2))
    udp = bl.free_port()
    p = ctx.track(bl.Proxy(ctx.dir / "conv-beacon", module=ctx.module, growth=trials + 4,
                           members=[site.member_url(0)],
                           receiver=(udp, f"{int(timeout * 1000)}ms"))).start_receiver()
    ha = None
    if why:
        ctx.notes.append(f"convergence: HAProxy not measured: haproxy missing ({why})")
    else:
        ha = ctx.track(bl.HAProxy(ctx.dir / "conv-haproxy", [("base", site.ports[0])])).start()
    sender = bl.Sender(udp)
    pb = bl.Poller(p.port)
    ph = bl.Poller(ha.port) if ha else None
    sent_at = {}
    res = {"join": [], "join_polls": [], "join_last_rtt": [], "added": [], "evict": [],
           "haproxy_join": [], "haproxy_polls": [], "haproxy_last_rtt": [],
           "poll_rtt_ms": [], "failures": []}
    try:
        for i in range(1, trials + 1):
            url, name = site.member_url(i), site.names[i]
            # beacon: first datagram -> first request served by the new member
            dg = sender.datagram(url)
            t0, wall = time.monotonic(), time.time()
            sender.send(dg)
            join, polls = poll_until(pb, name, t0)
            sent_at[url] = wall
            if join is None:
                res["failures"].append(f"beacon join of {url} not seen in 5 s")
                continue
            res["join"].append(join)
            res["join_polls"].append(polls)
            res["join_last_rtt"].append(pb.last_rtt)
            # beacon: last datagram -> last request it gets after the timeout
            dg = sender.datagram(url)
            t_last = time.monotonic()
            sender.send(dg)
            last_hit, n, t_start = None, 0, time.monotonic()
            while time.monotonic() < t_last + timeout + tail:
                status, body = pb.get()
                n += 1
                if bl.body_name(body) == name:
                    last_hit = time.monotonic()
            res["poll_rtt_ms"].append(1e3 * (time.monotonic() - t_start) / max(1, n))
            if last_hit is None:
                res["failures"].append(f"{url}: no request reached it after the join")
            else:
                res["evict"].append(last_hit - (t_last + timeout))
            # HAProxy: runtime API add + enable -> first request served
            if ha:
                sname = f"s{i}"
                s = ha.connect_api()
                cmd = f"add server be/{sname} 127.0.0.1:{site.ports[i]}; enable server be/{sname}\n"
                t0 = time.monotonic()
                s.sendall(cmd.encode())
                join, polls = poll_until(ph, name, t0)
                reply = ha.read_reply(s)
                if join is None:
                    res["failures"].append(f"haproxy join of {sname} not seen: {reply.strip()}")
                else:
                    res["haproxy_join"].append(join)
                    res["haproxy_polls"].append(polls)
                    res["haproxy_last_rtt"].append(ph.last_rtt)
                ha.api(f"disable server be/{sname}")
            log(f"convergence: trial {i}/{trials}")
    finally:
        pb.close()
        if ph:
            ph.close()
        sender.close()
    text = p.log_text("convergence-error.log")
    evicted = ctx.figure("convergence", ex.logged, text, ex.EVICTED_RE, "BCN00035 evicted",
                         len(res["evict"]))
    # where the join goes: datagram -> "added" log line (its microsecond
    # time stamp) -> first request served
    res["added"] = ctx.figure("convergence", ex.delays, ex.log_times(text, ex.ADDED_RE),
                              sent_at, "BCN00030 added")
    ctx.check_log(p, "convergence/beacon proxy")
    ctx.raw["convergence"] = res

    def ms_row(title, xs, extra=""):
        if xs is None:
            return f"   {title:34} BROKEN (see the goals)"
        if not xs:
            return f"   {title:34} none"
        return (f"   {title:34}{len(xs):>4}{1e3 * bl.pct(xs, 50):>9.2f}{1e3 * bl.pct(xs, 99):>9.2f}"
                f"   ({rng(xs, '.2f', 1e3)}){extra}")
    lines = [f"   {trials} trials, each a new backend; client: one keep-alive connection "
             f"polling GET /f (round trip median {fmt(bl.median(res['poll_rtt_ms']), '.2f')} ms);",
             f"   p99 is nearest-rank (of {trials}: the largest); times in ms",
             f"   {'':34}{'n':>4}{'p50':>9}{'p99':>9}   (min-max)",
             ms_row("beacon join: datagram -> served", res["join"],
                    f"  polls {fmt(bl.median(res['join_polls']), '.0f')}"),
             ms_row("  datagram -> added (log time)", res["added"]),
             ms_row("  the serving request's round trip", res["join_last_rtt"]),
             ms_row("HAProxy join: add+enable -> served", res["haproxy_join"],
                    f"  polls {fmt(bl.median(res['haproxy_polls']), '.0f')}")
             if ha else "   HAProxy join: not measured (haproxy missing)",
             ms_row("  the serving request's round trip", res["haproxy_last_rtt"]),
             ms_row("beacon eviction, after the timeout", res["evict"],
                    f"  evictions logged: {fmt(evicted, 'd', 'BROKEN')}"),
             f"     (last response from it - (its last datagram + ProxyBeaconTimeout "
             f"{timeout:g} s))"]
    if res["failures"]:
        lines.append(f"   failures: {len(res['failures'])}, e.g. {res['failures'][0]}")
    convergence_goals(ctx, res, trials, haproxy=ha is not None)
    return lines


def convergence_goals(ctx, res, trials, haproxy):
    """A join or eviction not seen within its time is a real figure that
    misses (MISSED); HAProxy serving none of its joins leaves the
    comparison without data (BROKEN)."""
    j, h, e = res["join"], res["haproxy_join"], res["evict"]
    none = f"none of {trials} seen"
    if not haproxy:
        ctx.goal("convergence", "beacon join p50 <= HAProxy join p50", None,
                 "HAProxy not measured")
    elif not h:
        ctx.broken("convergence", f"HAProxy served none of its {trials} joins: "
                   f"{res['failures'][-1] if res['failures'] else '?'}")
    elif j:
        ctx.goal("convergence", "beacon join p50 <= HAProxy join p50",
                 bl.pct(j, 50) <= bl.pct(h, 50),
                 f"{1e3 * bl.pct(j, 50):.2f} ms vs {1e3 * bl.pct(h, 50):.2f} ms")
    ctx.goal("convergence", "beacon join p99 < 10 ms",
             bool(j) and bl.pct(j, 99) < 0.010 and len(j) == trials,
             f"{1e3 * bl.pct(j, 99):.2f} ms, {len(j)} of {trials} seen" if j else none)
    ctx.goal("convergence", "eviction within 100 ms after the timeout",
             bool(e) and bl.pct(e, 99) <= 0.100 and len(e) == len(j),
             f"p99 {1e3 * bl.pct(e, 99):.2f} ms, max {1e3 * max(e):.2f} ms" if e else none)


# ---- 4. footprint ------------------------------------------------------------------

def proxy_memory(proxy):
    kids = ex.need(proxy.child_pids(), f"no child process of {proxy.dir.name}")
    parent = bl.memory(proxy.pid)
    rss = pss = 0
    for k in kids:
        m = bl.memory(k)
        rss += m["Rss"]
        pss += m["Pss"]
    return {"children": len(kids), "rss_kib": rss, "pss_kib": pss,
            "parent_rss_kib": parent["Rss"], "parent_pss_kib": parent["Pss"]}


def sampled_memory(proxy, quick):
    """Memory twice: "synced", after requests to balancer-manager in every
    child (each syncs the members, no backend connection is opened), and
    "loaded", the median of 1 (quick) or 3 samples each after wrk load
    through the members (children differ in how many backends they happened
    to connect to, hence the samples)."""
    load(proxy, quick, "/balancer-manager")
    synced = proxy_memory(proxy)
    samples = []
    for _ in range(1 if quick else 3):
        load(proxy, quick)
        samples.append(proxy_memory(proxy))
    out = {k: int(bl.median([x[k] for x in samples])) for k in samples[0]}
    out["samples"] = samples
    out["synced"] = synced
    return out


def load(proxy, quick, path=bl.FILE_PATH):
    """Requests through every child: each syncs its members."""
    # balancer-manager ignores (and logs) requests without a same-site Referer
    headers = [f"Referer: {proxy.url}/balancer-manager"]
    if shutil.which("wrk"):
        bl.run_wrk(proxy.port, 1 if quick else 2, 2, 16, path=path, headers=headers)
    else:
        for _ in range(300):
            proxy.get(path, headers=dict([headers[0].split(": ", 1)]))


def bench_footprint(ctx):
    members = 100
    site = ctx.site()
    urls = [site.member_url(i) for i in range(members)]
    mem = {}
    # without the module: the same 100 members, configured statically
    p = ctx.track(bl.Proxy(ctx.dir / "fp-static", members=urls, growth=4)).start()
    mem["static"] = sampled_memory(p, ctx.quick)
    ctx.check_log(p, "footprint/static proxy")
    bl.stop_quietly(p)

    udp = bl.free_port()
    # the status page tells receiver_pid() which child owns the receiver
    p = ctx.track(bl.Proxy(ctx.dir / "fp-beacon", module=ctx.module, growth=members,
                           receiver=(udp, "30"), status_page=True)).start_receiver()
    sender = bl.Sender(udp)
    for u in urls:
        sender.announce(u)
    sender.close()
    bl.wait_for(lambda: p.count_log(r"BCN00030: added backend") >= members, 30,
                f"{members} members added")
    wait_members(p, urls)
    mem["beacon"] = sampled_memory(p, ctx.quick)

    # receiver CPU per 1,000 announcements (re-announcements of the 100):
    # one at a time, each waking the receiver, and in sendmmsg bursts
    cpu = []
    if ctx.flood:
        pid = p.receiver_pid()
        idle_s = 1.0 if ctx.quick else 3.0
        urls_file = ctx.dir / "fp-urls.txt"
        urls_file.write_text("\n".join(urls) + "\n")
        c0, t0 = bl.cpu_seconds(pid), time.monotonic()
        time.sleep(idle_s)
        idle_rate = (bl.cpu_seconds(pid) - c0) / (time.monotonic() - t0)
        plans = ([(1000, 1, 1000), (10000, 64, 5000)] if ctx.quick
                 else [(1000, 1, 3000), (10000, 64, 30000)])
        for rate, batch, count in plans:
            s0 = receiver_socket(udp)["drops"]
            c2, t2 = bl.cpu_seconds(pid), time.monotonic()
            f = flood(ctx, udp, "valid", count / rate + 30, rate=rate, count=count,
                      urls_file=urls_file, batch=batch)
            bl.wait_for(lambda: bl.udp_socket(udp)["rx_queue"] == 0, 10, "drain",
                        interval=0.005)
            time.sleep(0.05)
            c3, t3 = bl.cpu_seconds(pid), time.monotonic()
            used = c3 - c2
            drops = receiver_socket(udp)["drops"] - s0
            ex.receiver_load(f["sent"] - drops, t3 - t2, used)  # Broken if cpu is stuck
            cpu.append({"rate": rate, "batch": batch, "sent": f["sent"],
                        "send_rate": f["rate"], "drops": drops,
                        "idle_rate": idle_rate, "cpu_seconds": used, "seconds": t3 - t2,
                        "ms_per_1000": 1e6 * used / f["sent"],
                        "net_ms_per_1000": 1e6 * (used - idle_rate * (t3 - t2)) / f["sent"]})
    ctx.check_log(p, "footprint/beacon proxy")
    bl.stop_quietly(p)
    ctx.raw["footprint"] = {"memory": mem, "cpu": cpu}

    lines = [f"   {members} members; KiB from /proc/<pid>/smaps_rollup, summed over the "
             "children (parent: its own figure)",
             "   synced: after requests to /balancer-manager in every child (members "
             "synced, no backend connection)",
             f"   loaded: after wrk through the members, median of "
             f"{len(mem['static']['samples'])} samples (PSS range)",
             f"   {'':36}{'children':>9}{'RSS':>9}{'PSS':>9}{'RSS/child':>10}"
             f"{'parent RSS':>11}{'PSS':>7}"]
    for key, title in (("static", "static members, no module"),
                       ("beacon", "beacon members, module")):
        for when in ("synced", "loaded"):
            m = mem[key]["synced"] if when == "synced" else mem[key]
            extra = ("" if when == "synced" else
                     f"   ({rng([x['pss_kib'] for x in m['samples']], '.0f')})")
            lines.append(f"   {title + ', ' + when:36}{m['children']:>9}{m['rss_kib']:>9}"
                         f"{m['pss_kib']:>9}{m['rss_kib'] // max(1, m['children']):>10}"
                         f"{m['parent_rss_kib']:>11}{m['parent_pss_kib']:>7}{extra}")
    for when in ("synced", "loaded"):
        a = mem["static"]["synced"] if when == "synced" else mem["static"]
        b = mem["beacon"]["synced"] if when == "synced" else mem["beacon"]
        d_rss = (b["rss_kib"] / max(1, b["children"]) - a["rss_kib"] / max(1, a["children"]))
        lines.append(f"   beacon - static, {when}: {d_rss:+.0f} KiB RSS per child, "
                     f"{b['pss_kib'] + b['parent_pss_kib'] - a['pss_kib'] - a['parent_pss_kib']:+d}"
                     " KiB PSS in all (children and parent)")
    if cpu:
        lines.append(f"   receiver CPU per 1,000 announcements (the owner child, idle "
                     f"{1e3 * cpu[0]['idle_rate']:.2f} ms/s subtracted for 'net'):")
        for c in cpu:
            how = ("one datagram at a time, each wakes the receiver" if c["batch"] == 1
                   else f"bursts of {c['batch']} (sendmmsg)")
            lines.append(f"     {c['sent']:>6.0f} at {c['send_rate']:>6.0f}/s, {how:47}"
                         f"{c['ms_per_1000']:>7.2f} ms, net {c['net_ms_per_1000']:.2f} ms;"
                         f" {c['drops']} dropped")
    else:
        lines.append(f"   receiver CPU: not measured ({ctx.flood_error})")
    return lines


# ---- 6. churn ----------------------------------------------------------------------

# Receiver settings of the churn section. Hundreds of urls pass through a
# proxy here, and the member table tracks 256 at once: the record of a
# silent url frees up after 2 x ProxyBeaconMaxSkew, 2 s with these; left
# members are forgotten (their slots the first reused) after 4 s.
CHURN_RECEIVER = "ProxyBeaconMaxSkew 1\nProxyBeaconForget 4\n"
CHURN_TIMEOUT = "3"  # ProxyBeaconTimeout; live members announce every second
# the receiver's event counters (/beacon-status?json) the churn rows show
CHURN_EVENTS = ("added", "recycled", "leaving", "reenabled", "evicted")


def churn_proxy(ctx, name, growth, members=()):
    """A proxy for the churn section: the receiver above, /beacon-status."""
    udp = bl.free_port()
    return ctx.track(bl.Proxy(ctx.dir / name, module=ctx.module, growth=growth,
                              members=members, receiver=(udp, CHURN_TIMEOUT),
                              receiver_extra=CHURN_RECEIVER,
                              status_page=True)).start_receiver()


def status_note(ctx, proxy, label):
    if proxy.status_retries:
        ctx.notes.append(f"{label}: /beacon-status?json closed without an answer "
                         f"{proxy.status_retries} time(s) (tried again)")


def events_delta(a, b):
    return ex.events_delta(a, b, CHURN_EVENTS)


def ms_stats(xs):
    """'p50 X, p99 Y (min-max)' in ms of seconds xs."""
    if not xs:
        return "no data"
    return (f"p50 {1e3 * bl.pct(xs, 50):.2f}, p99 {1e3 * bl.pct(xs, 99):.2f} "
            f"({rng(xs, '.2f', 1e3)})")


def churn_join(ctx, site):
    """Datagram -> first response from the new backend, joining a free
    growth slot (proxy F) or a recycled one (proxy R, its growth used up by
    members that served and left long enough ago that their slots are
    recyclable before the trial starts). Trials alternate F / R."""
    trials = 5 if ctx.quick else 20
    idx = iter(range(1, len(site.ports)))
    base = site.member_url(0)
    pf = churn_proxy(ctx, "churn-free", trials + 4, [base])
    pr = churn_proxy(ctx, "churn-recycled", trials, [base])
    senders = {"free": bl.Sender(pf.udp_port), "recycled": bl.Sender(pr.udp_port)}
    pollers = {"free": bl.Poller(pf.port), "recycled": bl.Poller(pr.port)}
    proxies = {"free": pf, "recycled": pr}
    res = {"free": [], "recycled": [], "free_polls": [], "recycled_polls": [],
           "failures": [], "recyclable_wait": []}
    sent_at = {"free": {}, "recycled": {}}
    try:
        # R: growth used up by members that served, then left
        fill = [next(idx) for _ in range(trials)]
        fill_urls = [site.member_url(i) for i in fill]
        for u in fill_urls:
            senders["recycled"].announce(u)
        wait_members(pr, fill_urls)
        if not serves_all(pr.port, [site.names[i] for i in fill] + [site.names[0]],
                          tries=100 * trials):
            res["failures"].append("not every fill member of R served before leaving")
        t_left = time.monotonic()
        for u in fill_urls:
            senders["recycled"].leave(u)

        def recyclable(n):
            g = ex.growth(pr.beacon_status())
            return g if g["recyclable"] >= n else None
        log(f"churn: waiting until R's {trials} slots are recyclable")
        g = bl.wait_for(lambda: recyclable(trials), 30,
                        f"{trials} recyclable slots in R", interval=0.1)
        res["cooled_s"] = time.monotonic() - t_left
        res["growth_before"] = g
        for i in range(trials):
            for kind in (("free", "recycled") if i % 2 == 0 else ("recycled", "free")):
                if kind == "recycled":
                    t = time.monotonic()
                    bl.wait_for(lambda: recyclable(1), 20, "a recyclable slot in R",
                                interval=0.05)
                    res["recyclable_wait"].append(time.monotonic() - t)
                k = next(idx)
                url, name = site.member_url(k), site.names[k]
                dg = senders[kind].datagram(url)
                t0, wall = time.monotonic(), time.time()
                senders[kind].send(dg)
                join, polls = poll_until(pollers[kind], name, t0)
                senders[kind].leave(url)
                sent_at[kind][url] = wall
                if join is None:
                    res["failures"].append(f"{kind} join of {url} not seen in 5 s")
                    continue
                res[kind].append(join)
                res[f"{kind}_polls"].append(polls)
            log(f"churn: join trial {i + 1}/{trials}")
        res["growth_after"] = ex.growth(pr.beacon_status())
    finally:
        for x in list(pollers.values()) + list(senders.values()):
            x.close()
    added = ex.log_times(pf.log_text("join-free-error.log"), ex.ADDED_RE)
    text_r = pr.log_text("join-recycled-error.log")
    recycled = ex.log_times(text_r, ex.RECYCLED_TIME_RE)
    res["logged"] = {"free": ctx.figure("churn", ex.delays, added, sent_at["free"],
                                        "BCN00030 added"),
                     "recycled": ctx.figure("churn", ex.delays, recycled, sent_at["recycled"],
                                            "BCN00038 recycled")}
    res["recycled_joins"] = sum(1 for u in sent_at["recycled"] if u in recycled)
    res["added_in_r"] = ex.log_count(text_r, ex.ADDED_RE)
    for label, p in proxies.items():
        ctx.check_log(p, f"churn/join {label} proxy")
        status_note(ctx, p, f"churn/join {label} proxy")
        bl.stop_quietly(p)
    ctx.raw.setdefault("churn", {})["join"] = res

    f, r = res["free"], res["recycled"]
    lines = [f"   a) join: datagram -> first response from the new backend, {trials} trials "
             "each, alternating; one keep-alive",
             "      client polling GET /f; a static member serves meanwhile; each new member "
             "says state=leaving once seen",
             f"      recycled: growth={trials}, used up by {trials} members that served and left;"
             f" all recyclable {fmt(res.get('cooled_s'), '.1f')} s after leaving",
             f"      {'':30}{'n':>4}{'p50':>9}{'p99':>9}   (min-max), ms",
             ]
    for kind, title in (("free", "into a free slot"), ("recycled", "into a recycled slot")):
        xs, lg = res[kind], res["logged"][kind]
        if lg is None:
            lg = []
            lines.append(f"      {title}: the log time stamps are BROKEN (see the goals)")
        if xs:
            lines.append(f"      {title:30}{len(xs):>4}{1e3 * bl.pct(xs, 50):>9.2f}"
                         f"{1e3 * bl.pct(xs, 99):>9.2f}   ({rng(xs, '.2f', 1e3)})"
                         f"  polls {fmt(bl.median(res[kind + '_polls']), '.0f')}")
        else:
            lines.append(f"      {title:30} no data")
        what = "added" if kind == "free" else "recycled"
        lines.append(f"      {'  datagram -> ' + what + ' (log time)':30}{len(lg):>4}"
                     + (f"{1e3 * bl.pct(lg, 50):>9.2f}{1e3 * bl.pct(lg, 99):>9.2f}"
                        f"   ({rng(lg, '.2f', 1e3)})" if lg else "  -"))
    lines.append(f"      recycled trials that took a recycled slot (BCN00038): "
                 f"{res['recycled_joins']}/{len(sent_at['recycled'])}; plain adds in R: "
                 f"{res['added_in_r'] - trials}; R growth after: {res.get('growth_after')}")
    if res["failures"]:
        lines.append(f"      failures: {len(res['failures'])}, e.g. {res['failures'][0]}")
    if f and r:
        pf50, pr50 = bl.pct(f, 50), bl.pct(r, 50)
        ctx.goal("churn", "join into a recycled slot p50 <= 2 x into a free slot p50",
                 pr50 <= 2 * pf50 and res["recycled_joins"] == len(sent_at["recycled"]),
                 f"{1e3 * pr50:.2f} ms vs {1e3 * pf50:.2f} ms (ratio {pr50 / pf50:.2f}; p99 "
                 f"{1e3 * bl.pct(r, 99):.2f} vs {1e3 * bl.pct(f, 99):.2f} ms; "
                 f"{res['recycled_joins']}/{len(sent_at['recycled'])} were recycles)")
    else:
        ctx.goal("churn", "join into a recycled slot p50 <= 2 x into a free slot p50", None,
                 "not measured")
    return lines


class Churner:
    """Membership changes at rate per second while resumed, in pairs: a
    join (a url on a port of the shared backend that no slot is named after:
    never used, or its slot was recycled for another url) announced at once
    and then every second with the others, and half a period later a leave
    (the longest-serving member says state=leaving and goes silent)."""

    def __init__(self, proxy, sender, site, hb, pool, rate):
        self.proxy, self.sender, self.site, self.hb = proxy, sender, site, hb
        self.pool = pool                      # deque of port indexes free to join
        self.index = {site.member_url(i): i for i in range(len(site.ports))}
        self.period = 2.0 / rate              # one join and one leave per period
        self.active = list(hb.urls)           # oldest first
        self.joins = self.leaves = self.skipped = self.reclaimed = 0
        self.log_pos = self._log_size()
        self.resumed = threading.Event()
        self.stopped = threading.Event()
        self.paused = threading.Event()
        self.paused.set()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _log_size(self):
        try:
            return self.proxy.error_log_path.stat().st_size
        except OSError:
            return 0

    def reclaim(self):
        """Urls whose slot went to another url may join again as new ones."""
        try:
            with open(self.proxy.error_log_path, "rb") as f:
                f.seek(self.log_pos)
                data = f.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        self.log_pos += end
        for m in ex.RECYCLED_RE.finditer(data[:end].decode("latin-1")):
            old = m.group(1)
            if old in self.index and old not in self.active:
                self.pool.append(self.index[old])
                self.reclaimed += 1

    def _join(self):
        if not self.pool:
            self.reclaim()
        if not self.pool:
            self.skipped += 1
            return
        url = self.site.member_url(self.pool.popleft())
        with self.hb.lock:
            self.hb.urls.append(url)
        self.sender.announce(url)
        self.active.append(url)
        self.joins += 1

    def _leave(self):
        url = self.active.pop(0)
        with self.hb.lock:
            self.hb.urls.remove(url)
        self.sender.leave(url)
        self.leaves += 1

    def _run(self):
        while not self.stopped.is_set():
            if not self.resumed.is_set():
                self.paused.set()
                self.resumed.wait(0.1)
                continue
            self.paused.clear()
            t = time.monotonic()
            self._join()
            self.stopped.wait(max(0.0, t + self.period / 2 - time.monotonic()))
            self._leave()
            self.reclaim()
            self.stopped.wait(max(0.0, t + self.period - time.monotonic()))

    def start(self):
        self.thread.start()
        return self

    def resume(self):
        self.resumed.set()

    def pause(self):
        """Returns once the current pair is done."""
        self.resumed.clear()
        self.paused.wait(5)

    def stop(self):
        self.resumed.clear()
        self.stopped.set()
        self.thread.join(5)

    def counts(self):
        return {"joins": self.joins, "leaves": self.leaves, "skipped": self.skipped,
                "t": time.monotonic()}


def churn_throughput(ctx, site):
    """wrk through 50 members, rounds without churn and with 10 membership
    changes per second, alternating."""
    why = missing_tool("wrk")
    if why:
        ctx.goal("churn", "req/s with 10 changes/s >= 0.95 x without", None, "wrk missing")
        return [f"   b) throughput: not run: wrk missing ({why})"]
    members, growth, rate = 50, 90, 10
    rounds, secs = (1, 3) if ctx.quick else (4, 10)
    threads, conns = 2, 32
    p = churn_proxy(ctx, "churn-wrk", growth)
    sender = bl.Sender(p.udp_port)
    pool = collections.deque(range(len(site.ports)))
    urls = [site.member_url(pool.popleft()) for _ in range(members)]
    for u in urls:
        sender.announce(u)
    hb = bl.Heartbeat(sender, urls, 1.0).start()
    churn = Churner(p, sender, site, hb, pool, rate).start()
    runs = {"still": [], "churn": []}
    warm = {}
    try:
        wait_members(p, urls, 30)
        # warm-up, churning until the free slots are gone and slots are recycled
        log("churn: warm-up, churning until slots are recycled")
        churn.resume()
        t0, s0 = time.monotonic(), p.beacon_status()
        while time.monotonic() - t0 < 40:
            bl.run_wrk(p.port, 2, threads, conns)
            st = p.beacon_status()
            if ex.event(st, "recycled") - ex.event(s0, "recycled") >= 3:
                break
        churn.pause()
        warm = {"seconds": time.monotonic() - t0, "events": events_delta(s0, st),
                "growth": st["growth"]}
        for r in range(rounds):
            order = ["still", "churn"] if r % 2 == 0 else ["churn", "still"]
            for label in order:
                log(f"churn: throughput round {r + 1}/{rounds} {label}")
                a, ca = p.beacon_status(), churn.counts()
                if label == "churn":
                    churn.resume()
                res = bl.run_wrk(p.port, secs, threads, conns)
                if label == "churn":
                    churn.pause()
                b, cb = p.beacon_status(), churn.counts()
                res.pop("raw")
                res["events"] = events_delta(a, b)
                res["changes"] = (cb["joins"] - ca["joins"]) + (cb["leaves"] - ca["leaves"])
                res["changes_per_s"] = res["changes"] / (cb["t"] - ca["t"])
                res["skipped"] = cb["skipped"] - ca["skipped"]
                res["growth_after"] = ex.growth(b)
                res["active_after"] = ex.active_members(b)
                runs[label].append(res)
    finally:
        churn.stop()
        hb.stop()
        sender.close()
    text = p.log_text("throughput-error.log")
    waits, nslot = ex.log_count(text, ex.WAITS_RE), ex.log_count(text, ex.NO_SLOT_RE)
    ctx.check_log(p, "churn/throughput proxy")
    status_note(ctx, p, "churn/throughput proxy")
    bl.stop_quietly(p)
    ctx.raw.setdefault("churn", {})["throughput"] = {"warm": warm, "runs": runs,
                                                     "reclaimed": churn.reclaimed}

    def col(label, key):
        return [x[key] for x in runs[label] if x[key] is not None]
    med = {k: bl.median(col(k, "rps")) for k in runs}
    ev = {k: {e: sum(x["events"][e] for x in runs[k]) for e in CHURN_EVENTS} for k in runs}
    lines = [f"   b) throughput: {members} members (one apache2, a port each, 100-byte file), "
             f"growth={growth}; wrk -t{threads} -c{conns} -d{secs}s,",
             f"      {rounds} round(s) each, alternating; churn: {rate} changes/s, a new url "
             "joining and the oldest member leaving (state=leaving) in turn;",
             f"      warm-up: {warm['seconds']:.0f} s of churn until slots were recycled "
             f"({warm['events']['recycled']} recycled)",
             f"      {'':22}{'req/s median (range)':>24}{'p99 ms median (range)':>26}"
             f"{'non-2xx':>9}{'sock err':>9}{'changes/s':>10}"]
    for label, title in (("still", "no churn"), ("churn", f"{rate} changes/s")):
        xs = runs[label]
        lines.append(f"      {title:22}{fmt(med[label], '.0f'):>8} "
                     f"({rng(col(label, 'rps'), '.0f')})".ljust(52)
                     + f"{fmt(bl.median(col(label, 'p99')), '.2f'):>8} "
                     f"({rng(col(label, 'p99'), '.2f')})".ljust(24)
                     + f"{sum(x['non2xx'] for x in xs):>9}{sum(x['socket_errors'] for x in xs):>9}"
                     f"{fmt(bl.median(col(label, 'changes_per_s')), '.1f'):>10}")
    c = ev["churn"]
    lines.append(f"      during churn rounds: {c['added']} joined ({c['recycled']} into recycled "
                 f"slots), {c['leaving']} left; joins that waited for a slot (logged, 1 per 10 s "
                 f"at most): {waits}; no slot: {nslot}; skipped (no url free): "
                 f"{sum(x['skipped'] for x in runs['churn'])}")
    for label, title in (("still", "no churn"), ("churn", "churn")):
        kinds = collections.Counter()
        for x in runs[label]:
            kinds.update(x.get("socket_error_kinds", {}))
        if sum(kinds.values()):
            lines.append(f"      wrk socket errors, {title}: "
                         + ", ".join(f"{k} {v}" for k, v in kinds.items() if v))
    act = [x["active_after"] for x in runs["churn"] + runs["still"]]
    lines.append(f"      active members after each round: {rng(act, '.0f')}; growth after the "
                 f"last: {(runs['churn'] or runs['still'])[-1]['growth_after'] if act else '-'}")
    if med["still"] and med["churn"]:
        ratio = med["churn"] / med["still"]
        paired = [c_["rps"] / s_["rps"] for s_, c_ in zip(runs["still"], runs["churn"])]
        lines.append(f"      {'churn/no churn':22}{ratio:>8.3f} (per round {rng(paired, '.3f')})")
        errs = {k: sum(x["non2xx"] + x["socket_errors"] for x in runs[k]) for k in runs}
        ctx.goal("churn", f"req/s with {rate} changes/s >= 0.95 x without", ratio >= 0.95,
                 f"{ratio:.3f} ({med['churn']:.0f} vs {med['still']:.0f} req/s, rounds "
                 f"{rng(paired, '.3f')}; errors {errs['churn']} vs {errs['still']}; "
                 f"{c['recycled']} recycles)")
    return lines


class LoadClient(bl.Threads):
    """Keep-alive GET /f in a loop from a few threads, no retry: every
    non-200 and every connection error counts. Records which backend
    answered, and when (the body names it)."""

    def __init__(self, port, threads=2):
        self.port = port
        self.lock = threading.Lock()
        self.statuses = collections.Counter()
        self.errors = collections.Counter()
        self.first = {}   # backend name -> first answer (monotonic)
        self.last = {}    # backend name -> last answer
        self.after_leave = collections.Counter()
        self.left = {}    # backend name -> when it said leaving
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True)
                        for _ in range(threads)]

    def _run(self):
        p = bl.Poller(self.port)
        try:
            while not self.stopped.is_set():
                try:
                    status, body = p.get_strict()
                except (OSError, ConnectionError) as e:
                    with self.lock:
                        self.errors[type(e).__name__] += 1
                    time.sleep(0.001)
                    continue
                now = time.monotonic()
                name = bl.body_name(body) if status == 200 else None
                with self.lock:
                    self.statuses[status] += 1
                    if name:
                        self.first.setdefault(name, now)
                        self.last[name] = now
                        left = self.left.get(name)
                        if left is not None and now > left + 0.05:
                            self.after_leave[name] += 1
        finally:
            p.close()

    def seen_since(self, name, t):
        with self.lock:
            last = self.last.get(name)
        return last is not None and last >= t

    def failed(self):
        with self.lock:
            return (sum(n for s, n in self.statuses.items() if s != 200)
                    + sum(self.errors.values()))


def churn_rolling(ctx):
    """Every member of a 10-member balancer replaced one by one under load:
    the new url joins and serves, then the old backend says state=leaving
    and stops gracefully, as the module's sender does."""
    n = 10
    passes = 1 if ctx.quick else 2
    growth = n + 5
    sites = [ctx.track(bl.Site(ctx.dir / f"roll-b{i}", [f"r{i}"], mpm=bl.SMALL_MPM)).start()
             for i in range(n * (passes + 1))]
    p = churn_proxy(ctx, "churn-rolling", growth)
    sender = bl.Sender(p.udp_port)
    live = sites[:n]
    hb = bl.Heartbeat(sender, [s.member_url(0) for s in live], 1.0).start()
    client = None
    res = {"join": [], "closed": [], "exited": [], "failures": []}
    stopping = []  # (site, pids) told to stop gracefully
    try:
        wait_members(p, [s.member_url(0) for s in live])
        client = LoadClient(p.port, threads=2).start()
        t = time.monotonic()
        bl.wait_for(lambda: all(client.seen_since(s.names[0], t) for s in live), 20,
                    "every first member to serve", interval=0.05)
        s0 = p.beacon_status()
        t_start = time.monotonic()
        for step, new in enumerate(sites[n:]):
            url = new.member_url(0)
            with hb.lock:
                hb.urls.append(url)
            t0 = time.monotonic()
            sender.announce(url)
            try:
                bl.wait_for(lambda: client.seen_since(new.names[0], t0), 30,
                            f"{url} to serve", interval=0.002)
                res["join"].append(time.monotonic() - t0)
            except AssertionError:
                res["failures"].append(f"step {step + 1}: {url} did not serve within 30 s")
            old = live.pop(0)
            with hb.lock:
                hb.urls.remove(old.member_url(0))
            with client.lock:
                client.left[old.names[0]] = time.monotonic()
            sender.leave(old.member_url(0))
            t1 = time.monotonic()
            stopping.append((old, old.begin_graceful_stop()))
            try:
                bl.wait_for(lambda: not old.listening(), 5, f"{old.url} to close its port",
                            interval=0.002)
                res["closed"].append(time.monotonic() - t1)
            except AssertionError:
                res["failures"].append(f"step {step + 1}: {old.url} still listening 5 s "
                                       "after SIGWINCH")
            live.append(new)
            log(f"churn: rolling step {step + 1}/{len(sites) - n}")
        res["seconds"] = time.monotonic() - t_start
        t = time.monotonic()
        bl.wait_for(lambda: all(client.seen_since(s.names[0], t) for s in live), 10,
                    "every last member to serve", interval=0.05)
        time.sleep(0.5)
        s1 = p.beacon_status()
    finally:
        if client:
            client.stop()
        hb.stop()
        sender.close()
        t = time.monotonic()
        for old, pids in stopping:
            try:
                old.finish_stop(pids, timeout=max(1.0, t + 15 - time.monotonic()))
            except AssertionError as e:
                res["failures"].append(str(e))
        res["exited_s"] = time.monotonic() - t
    ev = events_delta(s0, s1)
    served = sum(client.statuses.values())
    non200 = {s: c for s, c in client.statuses.items() if s != 200}
    failed = client.failed()
    late = sum(client.after_leave.values())
    ctx.check_log(p, "churn/rolling proxy")
    status_note(ctx, p, "churn/rolling proxy")
    bl.stop_quietly(p)
    for s in sites:
        bl.stop_quietly(s)
    res.update({"statuses": dict(client.statuses), "errors": dict(client.errors),
                "events": ev, "after_leave": dict(client.after_leave)})
    ctx.raw.setdefault("churn", {})["rolling"] = res
    replaced = len(sites) - n
    lines = [f"   c) rolling replacement: {n} members, each its own apache2 (one child); "
             f"growth={growth}; {replaced} replacements ({passes} pass(es)),",
             "      each: the new url announces -> it serves; then the old one says "
             "state=leaving and stops gracefully (SIGWINCH);",
             "      client: 2 threads, keep-alive GET /f in a loop, no retry",
             f"      {replaced} replaced in {res['seconds']:.1f} s ({ev['added']} joined, "
             f"{ev['recycled']} into recycled slots, {ev['leaving']} left); "
             f"{served + sum(client.errors.values())} requests, {failed} failed "
             f"(non-2xx {sum(non200.values())}{' ' + str(non200) if non200 else ''}, "
             f"connection errors {sum(client.errors.values())}"
             f"{' ' + str(dict(client.errors)) if client.errors else ''})",
             f"      new url announced -> its first answer: {ms_stats(res['join'])} ms; "
             f"{sum(1 for x in res['join'] if x > 1)} waited > 1 s for a safe slot",
             f"      old backend: SIGWINCH -> its port refuses connections: "
             f"{ms_stats(res['closed'])} ms",
             f"      answers from a member > 50 ms after its state=leaving: {late}; every old "
             f"apache2 exited {fmt(res.get('exited_s'), '.1f')} s after the last step"]
    if res["failures"]:
        lines.append(f"      failures: {len(res['failures'])}, e.g. {res['failures'][0]}")
    ctx.goal("churn", f"rolling replacement of {n} members under load: 0 failed requests",
             failed == 0 and not res["failures"],
             f"{failed} failed of {served + sum(client.errors.values())}, "
             f"{replaced} replaced ({ev['recycled']} recycled slots)")
    return lines


def bench_churn(ctx):
    """Three parts, each reported on its own: one that fails says so and
    the others still run."""
    # one backend, a port per url; roomier than the MPM's defaults (BIG_MPM)
    site = ctx.track(bl.Site(ctx.dir / "churn-site", [f"c{i}" for i in range(160)],
                             mpm=bl.BIG_MPM)).start()
    return run_parts(ctx, "churn", (("a) join", churn_join, (ctx, site)),
                                    ("b) throughput", churn_throughput, (ctx, site)),
                                    ("c) rolling replacement", churn_rolling, (ctx,))))


def run_parts(ctx, section, parts):
    """The lines of each (label, fn, args) of a section: a part that cannot
    run (Skip) or fails is reported, as a line and a goal not measured, and
    the others run on."""
    lines = []
    for label, fn, args in parts:
        try:
            lines += fn(*args)
        except Skip as e:
            lines.append(f"   {label}: not run: {e}")
        except Broken as e:
            lines.append(ctx.broken(section, f"{label}: {e}"))
        except KeyboardInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 - report, go on
            first = (str(e).strip().splitlines() or [""])[0]
            tb = traceback.format_exc().strip().splitlines()
            lines += [f"   {label}: ERROR: {type(e).__name__}: {first[:300]}",
                      f"      at {tb[-3].strip() if len(tb) > 2 else ''}"]
            ctx.goal(section, f"{label[3:]}: not measured", None,
                     f"ERROR: {type(e).__name__}: {first[:120]}")
            log("".join(traceback.format_exc()))
    return lines


# ---- 7. fan-out --------------------------------------------------------------------

FAN_NAME = "fan.test"
FAN_ADDRS = 64  # BEACON_FANOUT_MAX_ADDRS: the most one name gives
FAN_INTERVAL = 1  # the module sender's ProxyBeaconInterval, seconds


def fan_port(addrs):
    """A port free_port() gave that UDP can bind on every one of addrs."""
    for _ in range(20):
        port = bl.free_port()
        socks = []
        try:
            for a in addrs:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind((a, port))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        return port
    raise RuntimeError(f"no UDP port free on all of {addrs[0]}..{addrs[-1]}")


class FanSinks:
    """UDP sockets on one port of addrs, standing in for a tier of proxies:
    a thread drains them all, counting each one's announcements and keeping
    the last (its seq and ts say how many the sender made, and when);
    state=leaving is counted apart."""

    def __init__(self, addrs):
        self.addrs = list(addrs)
        self.port = fan_port(self.addrs)
        self.socks = []
        self.sel = selectors.DefaultSelector()
        for i, a in enumerate(self.addrs):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((a, self.port))
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, i)
            self.socks.append(s)
        self.thread = None
        self.reset()

    def reset(self):
        n = len(self.addrs)
        self.counts, self.last, self.leaving = [0] * n, [None] * n, [0] * n
        self.first = self.leaving_seen = None

    def drops(self):
        return sum((bl.udp_socket(self.port, a) or {"drops": 0})["drops"]
                   for a in self.addrs)

    def _drain(self, i):
        s = self.socks[i]
        while True:
            try:
                data = s.recv(2048)
            except BlockingIOError:
                return
            if ex.LEAVING in data:
                self.leaving[i] += 1
                if self.leaving_seen is None:
                    self.leaving_seen = data
                continue
            self.counts[i] += 1
            self.last[i] = data
            if self.first is None:
                self.first = data

    def _run(self):
        while not self.stopped.is_set():
            for key, _ in self.sel.select(0.05):
                self._drain(key.data)

    def start(self):
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self):
        """Stops the thread, then reads what is left."""
        self.stopped.set()
        self.thread.join(10)
        for i in range(len(self.socks)):
            self._drain(i)

    def close(self):
        self.sel.close()
        for s in self.socks:
            s.close()


def fan_run(ctx, beaconctl, hosts, secret, sinks, seconds):
    """beaconctl send --interval 1ms to FAN_NAME (FAN_ADDRS addresses) for
    `seconds`, then SIGTERM. The rate is the sender's own: seq and ts of the
    first and the last announcement read back."""
    sinks.reset()
    drops = sinks.drops()
    sinks.start()
    proc = subprocess.Popen(hosts.launcher() + [
        str(beaconctl), "send", "--to", f"{FAN_NAME}:{sinks.port}",
        "--url", "http://127.0.0.1:9", "--interval", "1ms", "--secret-file", str(secret)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        bl.wait_for(lambda: sinks.first is not None or proc.poll() is not None, 10,
                    "beaconctl's first announcement")
        try:
            proc.wait(seconds)
            raise RuntimeError(f"beaconctl exited {proc.returncode}: "
                               f"{proc.stderr.read().strip()[:300]}")
        except subprocess.TimeoutExpired:
            pass
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(10)
        err = proc.stderr.read().strip()
        # leaving is each address's last datagram: once all are read, so is the rest
        try:
            bl.wait_for(lambda: all(sinks.leaving), 5, "state=leaving at every address")
        except AssertionError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stderr.close()
        sinks.stop()
    bl.record("fan-first.txt", sinks.first or b"")
    bl.record("fan-leaving.txt", sinks.leaving_seen or b"")
    bl.record("fan-last.txt", b"\n".join(d for d in sinks.last if d))
    rate = ex.fan_rate(sinks.first, sinks.last)
    made, ann_rate = rate["announcements"], rate["announcements_per_s"]
    reached = sum(1 for c in sinks.counts if c)
    return {"rc": rc, "stderr": err[:300], "announcements": made, "span_s": rate["span_s"],
            "announcements_per_s": ann_rate,
            "datagrams_per_s": ann_rate * reached if ann_rate else None,
            "addresses_reached": reached, "delivered": sum(sinks.counts),
            "expected": made * len(sinks.addrs), "leaving": sum(sinks.leaving),
            "min_per_address": min(sinks.counts), "max_per_address": max(sinks.counts),
            "socket_drops": sinks.drops() - drops}


def fanout_rate(ctx, hosts, secret):
    beaconctl = ctx.build / "beaconctl"
    if not beaconctl.is_file():
        raise Skip(f"{beaconctl} is not built (make build)")
    runs_n, secs = (2, 1) if ctx.quick else (5, 3)
    addrs = [f"127.0.1.{i}" for i in range(1, FAN_ADDRS + 1)]
    hosts.set({FAN_NAME: addrs})
    sinks = FanSinks(addrs)
    runs = []
    try:
        for r in range(runs_n):
            log(f"fanout: rate run {r + 1}/{runs_n}")
            runs.append(fan_run(ctx, beaconctl, hosts, secret, sinks, secs))
    finally:
        sinks.close()
    ctx.raw.setdefault("fanout", {})["rate"] = runs
    ann = ex.need([r["announcements_per_s"] for r in runs if r["announcements_per_s"]],
                  "no run read back announcements with a ts span")
    dgr = [r["datagrams_per_s"] for r in runs if r["datagrams_per_s"]]
    lost = sum(r["expected"] - r["delivered"] for r in runs)
    bad = [r for r in runs if r["rc"] != 0 or r["addresses_reached"] != FAN_ADDRS
           or r["leaving"] != FAN_ADDRS]
    lines = [f"   a) beaconctl send --interval 1ms (its smallest) --to {FAN_NAME}:PORT, the "
             f"name {FAN_ADDRS} addresses (127.0.1.1-{FAN_ADDRS}) in a private /etc/hosts;",
             f"      a UDP socket on each counts; {runs_n} run(s) of {secs} s; rates from the "
             "seq and ts of the first and last announcement read back",
             f"      announcements/s median {fmt(bl.median(ann), '.0f')} ({rng(ann, '.0f')}), "
             f"datagrams/s median {fmt(bl.median(dgr), '.0f')} ({rng(dgr, '.0f')}); "
             f"the 1 ms interval caps it at 1000 announcements/s",
             f"      delivered {sum(r['delivered'] for r in runs)} of "
             f"{sum(r['expected'] for r in runs)} datagrams (lost {lost}, socket drops "
             f"{sum(r['socket_drops'] for r in runs)}); per address and run "
             f"{min(r['min_per_address'] for r in runs)}-"
             f"{max(r['max_per_address'] for r in runs)}; state=leaving at "
             f"{min(r['leaving'] for r in runs)}-{max(r['leaving'] for r in runs)} "
             f"of {FAN_ADDRS} addresses"]
    for r in bad:
        lines.append(f"      run: exit {r['rc']}, {r['addresses_reached']} addresses reached, "
                     f"{r['leaving']} leaving; stderr: {r['stderr'][:150] or '-'}")
    return lines


def fan_proxy(ctx, label, addr, port):
    """A receiver on addr:port (a proxy of the tier), started and listening."""
    p = ctx.track(bl.Proxy(ctx.dir / label, module=ctx.module))
    p.tail_config = bl.receiver_config(port, timeout="30", listen=f"{addr}:{port}")
    p.start()
    p.wait_log(r"BCN00050: listening for beacons on udp %s:%d " % (re.escape(addr), port),
               since=0)
    return p


def fan_sender(ctx, hosts, target):
    """The module's sender, the integration tests' sender_httpd, every
    FAN_INTERVAL, resolving with the private hosts file."""
    def factory(**kwargs):
        return ctx.track(bl.Httpd(workdir=ctx.dir / "fan-sender", module=ctx.module,
                                  loglevel="warn", **kwargs))
    h = bl.sender_httpd(factory, [target], interval=str(FAN_INTERVAL))
    h.launcher = hosts.launcher()
    return h


def fanout_join(ctx, hosts):
    """A new address in the name -> that proxy has the member. Each trial
    adds one proxy's address to the name (the proxy was up and listening
    before) and polls its balancer-manager until the member is enabled.

    A trial begins just after the sender's last announcement (the previous
    join): begun at once, every trial would wait a whole interval for the
    next lookup. Trial k waits (k - 1) / trials of the interval first, so
    the trials sample the phases of the sender's interval evenly."""
    trials = 3 if ctx.quick else 5
    addrs = [f"127.0.2.{i}" for i in range(trials + 1)]  # [0]: there from the start
    port = fan_port(addrs)
    proxies = [fan_proxy(ctx, f"fan-proxy{i}", a, port) for i, a in enumerate(addrs)]
    hosts.set({FAN_NAME: addrs[:1]})
    sender = fan_sender(ctx, hosts, f"{FAN_NAME}:{port}").start()
    url = f"http://127.0.0.1:{sender.port}"
    wait_members(proxies[0], [url])
    res = {"polled": [], "logged": [], "failures": []}
    for k in range(1, trials + 1):
        p = proxies[k]
        time.sleep((k - 1) / trials * FAN_INTERVAL)  # the phase, not a wait for a state
        t_wall, t0 = time.time(), time.monotonic()
        hosts.set({FAN_NAME: addrs[:k + 1]})
        try:
            bl.wait_for(lambda: any(w["name"] == url and "Ok" in w["flags"]
                                    for w in p.members()), 10,
                        f"{url} in {addrs[k]}'s balancer", interval=0.005)
        except AssertionError as e:
            res["failures"].append(f"trial {k}: {e}")
            continue
        res["polled"].append(time.monotonic() - t0)
        m = p.wait_log(r"BCN00030: added backend %s " % re.escape(url), since=0)
        res["logged"].append(bl.logged_at(m) - t_wall)
        log(f"fanout: join trial {k}/{trials}")
    for i, p in enumerate(proxies):
        ctx.check_log(p, f"fanout/proxy {addrs[i]}")
    ctx.check_log(sender, "fanout/sender")
    ctx.raw.setdefault("fanout", {})["join"] = res
    polled, logged = res["polled"], res["logged"]
    med = bl.median(polled)
    lines = [f"   b) a new address in the name -> that proxy has the member: the module's "
             f"sender (ProxyBeaconInterval {FAN_INTERVAL}) to {FAN_NAME}:PORT;",
             f"      {trials} trials, each adds the address of a proxy already listening "
             "(127.0.2.k) to the private /etc/hosts, in place, at phase (k-1)/"
             f"{trials} of the interval after the last join",
             f"      polled (balancer-manager every 5 ms): median {fmt(med and 1e3 * med, '.0f')}"
             f" ms ({rng(polled, '.0f', 1e3)}); by the proxy's BCN00030 time stamp: median "
             f"{fmt(bl.median(logged) and 1e3 * bl.median(logged), '.0f')} ms "
             f"({rng(logged, '.0f', 1e3)}); median/interval "
             f"{fmt(med and med / FAN_INTERVAL, '.2f')}"]
    if res["failures"]:
        lines.append(f"      failures: {len(res['failures'])}, e.g. {res['failures'][0]}")
    worst = max(polled) if polled else None
    ctx.goal("fanout", "a new address in the name has the member within 1 interval + 1 s",
             bool(polled) and not res["failures"] and worst <= FAN_INTERVAL + 1,
             f"worst of {trials} {fmt(worst, '.2f')} s, median {fmt(med, '.2f')} s"
             + (f", {len(res['failures'])} failed" if res["failures"] else ""))
    return lines


def bench_fanout(ctx):
    """Two parts, each reported on its own (as churn's)."""
    why = private_hosts.usable()
    if why:
        raise Skip(why)
    hosts = private_hosts.HostsFile(ctx.dir / "fan-hosts")
    secret = ctx.dir / "fan-secret"
    secret.write_text(bl.SECRET + "\n")
    secret.chmod(0o600)
    return run_parts(ctx, "fanout", (("a) rate", fanout_rate, (ctx, hosts, secret)),
                                     ("b) new address", fanout_join, (ctx, hosts))))


# ---- 9. routing by context ---------------------------------------------------------

ROUTING_SIZES = (10, 1000)   # contexts in the virtual host's route table
ROUTING_GOAL = 0.98          # req/s routed / static ProxyPass, at each size
ROUTING_JOIN_GOAL = 0.005    # a new context: datagram -> first routed response, p50
# A receiver rebuilds its route table at most every 200 ms (ROUTE_EVERY in
# src/mod_proxy_beacon_members.c): a claim change sooner than that after
# the last rebuild waits for the next one, by design (issue 32). The
# trials measure a change on its own: each proxy's come this far apart.
ROUTING_JOIN_SPACING = 0.25
HOT_KEY, COLD_KEY = bl.service_key("s01"), bl.service_key("s02")
HOT_APP = "/hot/app"         # the context the throughput rounds request
ROUTING_PATHS = {"static": "/static/app/f", "routed": HOT_APP + "/f"}
CTX_PER_DATAGRAM = 16        # the most paths one ctx= holds
# issue 24's figures for mod_proxy_cluster on this machine: quoted, not measured
CLUSTER_FIGURES = ("mod_proxy_cluster at 1,000 contexts on 2 nodes (issue 24, measured "
                   "there, not here): 0.62-0.65 of a static ProxyPass,",
                   "   0.85-0.88 with its cache, which then routes a new context after "
                   "0.6 s (p50)")


def hot_claim(k):
    """What hot's first member claims in latency trial k (0: before any):
    the measured context and /hot/nK, which replaces /hot/n(K-1), so the
    table keeps its size."""
    return [HOT_APP, f"/hot/n{k}"]


def cold_members(n):
    """(url, contexts) of balancer cold's members, so that the table holds n
    contexts with hot's two: 16 contexts each, never requested; the urls
    are distinct origins on 127.0.3.x that nothing connects to."""
    names = [f"/apps/c{i:04d}" for i in range(1, n - len(hot_claim(0)) + 1)]
    chunks = [names[i:i + CTX_PER_DATAGRAM] for i in range(0, len(names), CTX_PER_DATAGRAM)]
    return [(f"http://127.0.3.{i + 1}:9", c) for i, c in enumerate(chunks)]


def claim(sender, service, url, contexts):
    sender.send(sender.datagram(url, extra=[("svc", service), ("ctx", ",".join(contexts))]))


def routing_proxy(ctx, n, hot_urls):
    """A proxy with balancers hot (contexts /hot/*, the two real members)
    and cold (/apps/*, up to 63 members that only fill the table), no
    ProxyPass but `ProxyPass /static balancer://hot/static`: the same
    members by a static ProxyPass. Started, announced, and waited for
    until ?json lists n contexts; (proxy, hot's sender)."""
    udp = bl.free_port()
    p = bl.Proxy(ctx.dir / f"routing-{n}", module=ctx.module, receiver=(udp, "0"),
                 status_page=True)
    cold = cold_members(n)
    p.proxy_config = p.balancer_block("hot", 4) + p.balancer_block("cold", len(cold) + 1)
    p.proxypass_config = "ProxyPass /static balancer://hot/static\n"
    p.tail_config = bl.STATUS_PAGE + bl.receiver_config(
        udp, balancer=None, timeout="0",  # never evicted: no heartbeat needed
        extra=f"ProxyBeaconBalancer hot service=hot secret={HOT_KEY} contexts=/hot/*\n"
              f"ProxyBeaconBalancer cold service=cold secret={COLD_KEY} contexts=/apps/*\n")
    ctx.track(p).start_receiver()
    hot, cold_sender = bl.Sender(udp, secret=HOT_KEY), bl.Sender(udp, secret=COLD_KEY)
    for url, contexts in cold:
        claim(cold_sender, "cold", url, contexts)
    cold_sender.close()
    claim(hot, "hot", hot_urls[0], hot_claim(0))
    claim(hot, "hot", hot_urls[1], [HOT_APP])
    routes = bl.wait_for(lambda: len(r := routed(p)) == n and r, 20,
                         f"{n} contexts in ?json", interval=0.05)
    wrong = [c for c, b in routes.items() if b != ("balancer://hot" if c.startswith("/hot")
                                                   else "balancer://cold")]
    if wrong:
        raise RuntimeError(f"contexts on the wrong balancer: {', '.join(wrong[:3])}")
    return p, hot


def routed(proxy):
    return ex.routed_contexts(proxy.beacon_status_body("routing-status.json"))


def routing_throughput(ctx, proxies, names):
    """wrk through the routed and the static path of each proxy, the four
    taking turns, the order reversed every other round."""
    rounds, secs = (1, 2) if ctx.quick else (5, 10)
    warm = 1 if ctx.quick else 3
    runs = {(n, k): [] for n in proxies for k in ROUTING_PATHS}
    for (n, k) in runs:
        if not serves_all(proxies[n].port, names, path=ROUTING_PATHS[k]):
            raise RuntimeError(f"{ROUTING_PATHS[k]} through the {n}-context proxy does not "
                               "reach both backends")
        bl.run_wrk(proxies[n].port, warm, 2, 32, path=ROUTING_PATHS[k])
    for r in range(rounds):
        order = list(runs) if r % 2 == 0 else list(reversed(runs))
        for n, k in order:
            log(f"routing: round {r + 1}/{rounds} {n} contexts {k}")
            before = children_cpu(proxies[n])
            res = bl.run_wrk(proxies[n].port, secs, 2, 32, path=ROUTING_PATHS[k])
            res["cpu_us"] = ctx.figure("routing", ex.us_per_request, before,
                                       children_cpu(proxies[n]), res["requests"])
            res.pop("raw")
            runs[(n, k)].append(res)
    return runs, rounds, secs


def children_cpu(proxy):
    """{pid: CPU seconds} of the proxy's children: less shaken by the other
    load on a shared machine than req/s is."""
    return {pid: bl.cpu_seconds(pid) for pid in proxy.child_pids()}


def routing_join(ctx, proxies, hot_senders, hot_url, names):
    """Trials, the proxies taking turns: hot's first member claims a new
    context /hot/nK (ex.routed_contexts: not routed before, a 404 from the
    proxy), and one keep-alive client polls GET /hot/nK/f until a member
    answers it (200, its name in the body); the seconds from the sendto,
    and the context's BCN00146 log time. Each proxy's trials are
    ROUTING_JOIN_SPACING apart."""
    trials = 10 if ctx.quick else 30
    res = {n: {"join": [], "polls": [], "routed_log": [], "failures": []} for n in proxies}
    sent_at = {n: {} for n in proxies}
    last_sent = {n: 0.0 for n in proxies}
    for k in range(1, trials + 1):
        for n in (proxies if k % 2 else list(reversed(list(proxies)))):
            context = hot_claim(k)[-1]
            poller = bl.Poller(proxies[n].port, f"{context}/f")
            try:
                status, _ = poller.get()
                if status != 404:
                    raise RuntimeError(f"{context}/f answered {status} before it was claimed")
                dg = hot_senders[n].datagram(hot_url, extra=[
                    ("svc", "hot"), ("ctx", ",".join(hot_claim(k)))])
                time.sleep(max(0.0, last_sent[n] + ROUTING_JOIN_SPACING - time.monotonic()))
                t0, wall = time.monotonic(), time.time()
                hot_senders[n].send(dg)
                last_sent[n] = t0
                sent_at[n][context] = wall
                polls = 0
                while time.monotonic() < t0 + 2.0:
                    status, body = poller.get()
                    polls += 1
                    if status == 200 and bl.body_name(body) in names:
                        res[n]["join"].append(time.monotonic() - t0)
                        res[n]["polls"].append(polls)
                        break
                else:
                    res[n]["failures"].append(f"{context} not routed within 2 s "
                                              f"({n} contexts)")
            finally:
                poller.close()
        log(f"routing: join trial {k}/{trials}")
    for n, p in proxies.items():
        text = p.log_text(f"routing-{n}-error.log")
        res[n]["routed_log"] = ctx.figure("routing", ex.delays,
                                          ex.log_times(text, ex.ROUTED_RE), sent_at[n],
                                          "BCN00146 routed")
    return res, trials


def bench_routing(ctx):
    why = missing_tool("wrk")
    if why:
        raise Skip(f"wrk missing ({why})")
    trials = 10 if ctx.quick else 30
    sites = [ctx.track(bl.Site(ctx.dir / f"routing-backend{i}", [f"h{i}"])) for i in range(2)]
    for s in sites:
        for path in [ROUTING_PATHS["static"], ROUTING_PATHS["routed"]] + [
                f"{hot_claim(k)[-1]}/f" for k in range(trials + 1)]:
            s.add_file(path)
        s.start()
    hot_urls = [s.member_url(0) for s in sites]
    names = [s.names[0] for s in sites]
    proxies, senders = {}, {}
    try:
        for n in ROUTING_SIZES:
            proxies[n], senders[n] = routing_proxy(ctx, n, hot_urls)
        runs, rounds, secs = routing_throughput(ctx, proxies, names)
        join, trials = routing_join(ctx, proxies, senders, hot_urls[0], names)
    finally:
        for s in senders.values():
            s.close()
    for n, p in proxies.items():
        ctx.check_log(p, f"routing/{n}-context proxy")
    ctx.raw["routing"] = {"throughput": {f"{n} {k}": v for (n, k), v in runs.items()},
                          "join": join}
    lines = [f"   one proxy per table size, each with balancer hot (2 apache2 backends, "
             f"100-byte file) and balancer cold (members that",
             f"   only fill the table); routed: GET {ROUTING_PATHS['routed']} (context "
             f"{HOT_APP}, no ProxyPass); static: GET {ROUTING_PATHS['static']}",
             "   (`ProxyPass /static balancer://hot/static`, the same members; a routed "
             "request checks it first)",
             f"   wrk -t2 -c32 -d{secs}s --latency, {rounds} round(s), the four runs taking "
             "turns, the order reversed every other round",
             f"   {'':34}{'req/s median (range)':>22}{'p99 ms median (range)':>26}"
             f"{'errors':>8}  proxy CPU us/request"]
    lines += routing_throughput_lines(ctx, runs)
    lines += routing_join_lines(ctx, join, trials)
    lines += ["   " + CLUSTER_FIGURES[0], CLUSTER_FIGURES[1]]
    return lines


def routing_throughput_lines(ctx, runs):
    lines = []
    for n in ROUTING_SIZES:
        med, cpu_med = {}, {}
        for k, title in (("static", "static ProxyPass"), ("routed", "routed by context")):
            xs = runs[(n, k)]
            rps, p99 = [x["rps"] for x in xs], [x["p99"] for x in xs if x["p99"] is not None]
            med[k] = bl.median(rps)
            errs = sum(x["non2xx"] + x["socket_errors"] for x in xs)
            cpu = [x["cpu_us"] for x in xs if x.get("cpu_us") is not None]
            cpu_med[k] = bl.median(cpu)
            lines.append(f"   {f'{n:,} contexts, {title}':34}{fmt(med[k], '.0f'):>8} "
                         f"({rng(rps, '.0f')})".ljust(59)
                         + f"{fmt(bl.median(p99), '.2f'):>8} ({rng(p99, '.2f')})".ljust(26)
                         + f"{errs:>8}" + f"{fmt(bl.median(cpu), '.1f'):>9} ({rng(cpu, '.1f')})")
        ratio = med["routed"] / med["static"]
        paired = [b["rps"] / a["rps"] for a, b in zip(runs[(n, "static")], runs[(n, "routed")])]
        cpu_ratio = (cpu_med["routed"] / cpu_med["static"]
                     if cpu_med["routed"] and cpu_med["static"] else None)
        lines.append(f"   {f'{n:,} contexts, routed/static':34}{ratio:>8.3f} "
                     f"(per round {rng(paired, '.3f')})".ljust(93)
                     + f"{fmt(cpu_ratio, '.3f'):>9} (CPU routed/static)")
        ctx.goal("routing", f"req/s routed/static ProxyPass >= {ROUTING_GOAL} with {n:,} "
                 "contexts", ratio >= ROUTING_GOAL, f"{ratio:.3f} (rounds {rng(paired, '.3f')}; "
                 f"{med['routed']:.0f} vs {med['static']:.0f} req/s; proxy CPU per request "
                 f"{fmt(cpu_med['routed'], '.1f')} vs {fmt(cpu_med['static'], '.1f')} us)")
    return lines


def latency_row(title, xs):
    """A table row of seconds xs: n, p50 and p99 in ms, their range; xs
    None (the extraction found nothing) says BROKEN, [] none."""
    if xs is None:
        return f"   {title:34} BROKEN (see the goals)"
    if not xs:
        return f"   {title:34} none"
    return (f"   {title:34}{len(xs):>4}{1e3 * bl.pct(xs, 50):>9.2f}"
            f"{1e3 * bl.pct(xs, 99):>9.2f}   ({rng(xs, '.2f', 1e3)})")


def routing_join_lines(ctx, join, trials):
    lines = [f"   a new context, {trials} trials per proxy, {ROUTING_JOIN_SPACING * 1000:.0f} ms apart "
             "(a change sooner after a route rebuild waits up to 200 ms for the next): hot's member "
             "claims /hot/nK",
             "   (replacing /hot/n(K-1)) -> first 200 from a member to a client polling GET /hot/nK/f "
             "on one keep-alive connection; times in ms",
             f"   {'':34}{'n':>4}{'p50':>9}{'p99':>9}   (min-max)"]
    met, detail = True, []
    for n in ROUTING_SIZES:
        r = join[n]
        for title, xs in ((f"{n:,} contexts: datagram -> routed", r["join"]),
                          ("  datagram -> BCN00146 (log time)", r["routed_log"])):
            lines.append(latency_row(title, xs))
        if r["failures"]:
            lines.append(f"   failures: {len(r['failures'])}, e.g. {r['failures'][0]}")
        j = r["join"]
        met = met and len(j) == trials and bl.pct(j, 50) <= ROUTING_JOIN_GOAL
        detail.append(f"{n:,} contexts {1e3 * bl.pct(j, 50):.2f} ms (p99 "
                      f"{1e3 * bl.pct(j, 99):.2f}, {len(j)} of {trials} seen)" if j
                      else f"{n:,} contexts: none of {trials} seen")
    ctx.goal("routing", f"a new context's datagram -> first routed response p50 <= "
             f"{1e3 * ROUTING_JOIN_GOAL:g} ms", met,
             "; ".join(detail) + "; mod_proxy_cluster with its cache: 0.6 s (issue 24, "
             "not measured here)")
    return lines


# ---- 10. scale ---------------------------------------------------------------------

# One balancer of 1,000 members: static BalancerMembers (proxy A) against
# announced ones in reserved slots (proxy B, ProxyBeaconBalancer slots=),
# the same backends; and the same proxies with 10 members, for the figures
# that must not grow with the balancer (join, CPU per renewal, memory).
SCALE_MANY, SCALE_FEW = 1000, 10
SCALE_SLOTS = 1024          # the 1,000 members and the join trials' urls
SCALE_TIMEOUT = "10"        # ProxyBeaconTimeout: outlives a restart's restore
SCALE_RATIO_GOAL = 0.98     # req/s announced/static
SCALE_JOIN_GOAL = 1.5       # join p50 and p99 at 1,000 members <= 1.5 x at 10
# A join is seen when the new member answers: its announcement names a
# route, and the trial's client sends it in this sticky-session cookie
# (httpd falls back to any member while no member has the route).
STICKY = "ROUTEID"
# The backend behind 1,000 members of four proxies: each proxy child keeps
# an idle keep-alive connection to every member it used, thousands in all.
# The event MPM holds an idle one without a thread, up to ThreadsPerChild +
# AsyncRequestWorkerFactor x idle threads per child (about 6,000 here: a
# proxy child with 1,000 members holds 1,000, and a proxy runs 3-5 children).
SCALE_MPM = ("StartServers 4\nServerLimit 4\nThreadsPerChild 64\nMaxRequestWorkers 256\n"
             "MinSpareThreads 64\nMaxSpareThreads 256\nAsyncRequestWorkerFactor 100\n"
             "ListenBacklog 1024")
# The proxies: 4 children of 25 threads from the start, always (the
# defaults start 3 and add some under wrk, and a child more or less moved
# the memory per member by 50 KiB).
SCALE_PROXY_MPM = ("StartServers 4\nServerLimit 4\nThreadsPerChild 25\nMaxRequestWorkers 100\n"
                   "MinSpareThreads 25\nMaxSpareThreads 100\n")


def scale_addresses(n, third):
    """n loopback addresses, 127.0.<third>.1-250, then <third + 1>, ..."""
    return [f"127.0.{third + i // 250}.{1 + i % 250}" for i in range(n)]


class Renewer(bl.ChildProcess):
    """bench_flood in the background: valid announcements of urls in turn,
    len(urls) a second (each url renewed every second), one datagram per
    sendmmsg, as independent senders' arrive. Stopped by its own Popen."""

    def __init__(self, ctx, port, urls, name):
        self.urls_file = ctx.dir / f"{name}-urls.txt"
        self.urls_file.write_text("\n".join(urls) + "\n")
        self.cmd = [ctx.flood, "--port", str(port), "--mode", "valid", "--urls-file",
                    str(self.urls_file), "--rate", str(len(urls)), "--batch", "1",
                    "--seconds", "600"]
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        return self


class ScaleRig:
    """The section's servers: the backend (one port on 1,000 + trial
    addresses), proxies static-1000, static-10, beacon-1000 and beacon-10,
    each beacon proxy's Renewer and its Sender for the trials."""

    def __init__(self, ctx):
        if not ctx.flood:
            raise Skip(ctx.flood_error or "no flood sender")
        self.ctx = ctx
        self.trials = 5 if ctx.quick else 20
        self.join_addrs = scale_addresses(self.trials, 99)
        addrs = scale_addresses(SCALE_MANY, 100)
        self.site = ctx.track(bl.Site(ctx.dir / "scale-site", addrs + self.join_addrs,
                                      mpm=SCALE_MPM, addresses=addrs + self.join_addrs))
        self.site.start(timeout=30)
        self.urls = [self.site.member_url(i) for i in range(SCALE_MANY)]
        self.join_urls = [self.site.member_url(SCALE_MANY + k) for k in range(self.trials)]
        self.sizes = (SCALE_MANY, SCALE_FEW)
        self.static = {n: self.proxy(f"scale-static-{n}", members=self.urls[:n])
                       for n in self.sizes}
        self.beacon, self.renewers, self.senders, self.fill = {}, {}, {}, {}
        for n in self.sizes:
            udp = bl.free_port()
            self.beacon[n] = self.proxy(f"scale-beacon-{n}", module=ctx.module,
                                        receiver=(udp, SCALE_TIMEOUT), status_page=True,
                                        slots=SCALE_SLOTS)
            self.senders[n] = bl.Sender(udp)
            self.renewers[n] = ctx.track(Renewer(ctx, udp, self.urls[:n], f"scale-{n}"))
        for n in self.sizes:
            t0 = time.monotonic()
            self.renewers[n].start()
            self.fill[n] = self.wait_rotation(n, t0, 20, "the sender started")

    def proxy(self, name, **kw):
        p = bl.Proxy(self.ctx.dir / name, extra=SCALE_PROXY_MPM, **kw)
        p.proxy_config += f"ProxySet balancer://cluster stickysession={STICKY}\n"
        self.ctx.track(p)
        return p.start_receiver(timeout=30) if kw.get("receiver") else p.start(timeout=30)

    def in_rotation(self, proxy, urls):
        """How many of urls balancer-manager lists Ok and enabled."""
        status, body = proxy.get("/balancer-manager?xml=1",
                                 {"Referer": f"{proxy.url}/balancer-manager"})
        if status != 200:
            return 0
        bl.record("manager.xml", body)
        return ex.in_rotation(ex.manager_members(body), urls)

    def wait_rotation(self, n, t0, timeout, what):
        """(first, all): seconds from t0 until the first and until all n
        members of beacon-n are in rotation (balancer-manager polled every
        20 ms; a refused or dropped request while it restarts is polled
        again). All at once at the end says a tick, one by one a walk."""
        urls, seen, first = self.urls[:n], [0], []

        def ok():
            try:
                seen[0] = self.in_rotation(self.beacon[n], urls)
            except (OSError, http.client.HTTPException):
                return False
            if seen[0] and not first:
                first.append(time.monotonic() - t0)
            return seen[0] == n
        try:
            bl.wait_for(ok, timeout, what, interval=0.02)
        except AssertionError:
            raise RuntimeError(f"beacon-{n}: {seen[0]} of {n} members in rotation "
                               f"{timeout} s after {what}") from None
        return first[0], time.monotonic() - t0

    def renewing(self):
        """Raises if a Renewer exited (its members would be evicted)."""
        for n, r in self.renewers.items():
            if r.proc and r.proc.poll() is not None:
                raise RuntimeError(f"bench_flood renewing beacon-{n} exited "
                                   f"{r.proc.returncode}: {r.proc.stderr.read()[:200]!r}")

    def close(self):
        for s in self.senders.values():
            s.close()


def scale_throughput(ctx, rig):
    """wrk through static-1000 and beacon-1000, alternating."""
    rounds, secs = (1, 2) if ctx.quick else (5, 10)
    warm = 1 if ctx.quick else 3
    pair = {"static": rig.static[SCALE_MANY], "beacon": rig.beacon[SCALE_MANY]}
    for p in pair.values():
        bl.run_wrk(p.port, warm, 2, 32)  # every child opens its backend connections
    runs = {k: [] for k in pair}
    for r in range(rounds):
        for label in (list(pair) if r % 2 == 0 else list(reversed(list(pair)))):
            log(f"scale: round {r + 1}/{rounds} {label}")
            before, t0 = children_cpu(pair[label]), time.monotonic()
            res = bl.run_wrk(pair[label].port, secs, 2, 32)
            res["cpu_us"] = ctx.figure("scale", ex.us_per_request, before,
                                       children_cpu(pair[label]), res["requests"])
            # the other proxy is idle meanwhile: the closes are this one's
            res["closed"] = bl.closed_to(rig.site.ports[0], time.monotonic() - t0)
            res.pop("raw")
            runs[label].append(res)
    rig.renewing()
    ctx.raw.setdefault("scale", {})["throughput"] = runs
    return scale_throughput_lines(ctx, runs, rounds, secs)


def scale_throughput_lines(ctx, runs, rounds, secs):
    """The rows of runs {static, beacon: [wrk figures]} and the goal: the
    ratio of the medians of the rounds."""
    med = {k: bl.median([x["rps"] for x in v]) for k, v in runs.items()}
    ratio = med["beacon"] / med["static"]
    paired = [b["rps"] / a["rps"] for a, b in zip(runs["static"], runs["beacon"])]
    lines = [f"   a) throughput: wrk -t2 -c32 -d{secs}s --latency GET /f, {rounds} round(s) "
             f"alternating; one balancer of {SCALE_MANY:,} members",
             f"   {'':34}{'req/s median (range)':>22}{'p99 ms median (range)':>26}{'errors':>8}"
             "  proxy CPU us/request"]
    cpu_med = {}
    for label, title in (("static", f"{SCALE_MANY:,} static BalancerMembers"),
                         ("beacon", f"{SCALE_MANY:,} announced, slots={SCALE_SLOTS}")):
        xs = runs[label]
        rps, p99 = [x["rps"] for x in xs], [x["p99"] for x in xs]
        errs = sum(x["non2xx"] + x["socket_errors"] for x in xs)
        cpu = [x["cpu_us"] for x in xs if x.get("cpu_us") is not None]
        cpu_med[label] = bl.median(cpu)
        lines.append(f"   {title:34}{fmt(med[label], '.0f'):>8} ({rng(rps, '.0f')})".ljust(59)
                     + f"{fmt(bl.median(p99), '.2f'):>8} ({rng(p99, '.2f')})".ljust(26)
                     + f"{errs:>8}" + f"{fmt(cpu_med[label], '.1f'):>9} ({rng(cpu, '.1f')})")
    cpu_ratio = (cpu_med["beacon"] / cpu_med["static"]
                 if cpu_med["beacon"] and cpu_med["static"] else None)
    lines.append(f"   {'announced/static':34}{ratio:>8.3f} (per round {rng(paired, '.3f')})"
                 .ljust(93) + f"{fmt(cpu_ratio, '.3f'):>9} (CPU, the receiver's included)")
    closed = {k: 1e3 * sum(x.get("closed", 0) for x in v) / sum(x["requests"] for x in v)
              for k, v in runs.items()}
    lines.append(f"   backend connections the proxy closed per 1,000 requests (time-wait on its "
                 f"side): static {closed['static']:.1f}, announced {closed['beacon']:.1f}")
    ctx.goal("scale", f"req/s {SCALE_MANY:,} announced / {SCALE_MANY:,} static members >= "
             f"{SCALE_RATIO_GOAL}",
             ratio >= SCALE_RATIO_GOAL, f"{ratio:.3f} (rounds {rng(paired, '.3f')}; "
             f"{med['beacon']:.0f} vs {med['static']:.0f} req/s; proxy CPU per request "
             f"{fmt(cpu_med['beacon'], '.1f')} vs {fmt(cpu_med['static'], '.1f')} us)")
    return lines


def scale_join(ctx, rig):
    """Trials, beacon-10 and beacon-1000 taking turns: a new url (its own
    address, route jK) announced once; a keep-alive client sending the
    route's cookie polls GET /f from the sendto until the body names the
    new backend; then the url says state=leaving."""
    res = {n: {"join": [], "added_log": [], "failures": []} for n in rig.sizes}
    sent_at = {n: {} for n in rig.sizes}
    for k in range(rig.trials):
        url, name = rig.join_urls[k], rig.site.names[SCALE_MANY + k]
        for n in (rig.sizes if k % 2 else tuple(reversed(rig.sizes))):
            p, s = rig.beacon[n], rig.senders[n]
            poller = bl.Poller(p.port, headers=[f"Cookie: {STICKY}=x.j{k}"])
            try:
                status, body = poller.get()
                if status != 200 or bl.body_name(body) == name:
                    raise RuntimeError(f"GET /f answered {status} {body[:40]!r} before "
                                       f"{url} joined")
                dg = s.datagram(url, extra=[("route", f"j{k}")])
                t0, wall = time.monotonic(), time.time()
                s.send(dg)
                sent_at[n][url] = wall
                while time.monotonic() < t0 + 5.0:
                    status, body = poller.get()
                    if status == 200 and bl.body_name(body) == name:
                        res[n]["join"].append(time.monotonic() - t0)
                        break
                else:
                    res[n]["failures"].append(f"{url} not served within 5 s ({n} members)")
            finally:
                poller.close()
                s.leave(url)
        log(f"scale: join trial {k + 1}/{rig.trials}")
    rig.renewing()
    for n in rig.sizes:
        text = rig.beacon[n].log_text(f"scale-{n}-error.log")
        res[n]["added_log"] = ctx.figure("scale", ex.delays, ex.log_times(text, ex.ADDED_RE),
                                         sent_at[n], "BCN00030 added")
    ctx.raw.setdefault("scale", {})["join"] = res
    lines = [f"   b) join, {rig.trials} trials per proxy, the two taking turns: a new url "
             "(its own address, route jK) announced once ->",
             f"   first response from it to a keep-alive client sending cookie {STICKY}=x.jK; "
             "times in ms",
             f"   {'':34}{'n':>4}{'p50':>9}{'p99':>9}   (min-max)"]
    for n in rig.sizes:
        for title, xs in ((f"{n:,} members: datagram -> serves", res[n]["join"]),
                          ("  datagram -> BCN00030 (log time)", res[n]["added_log"])):
            lines.append(latency_row(title, xs))
        if res[n]["failures"]:
            lines.append(f"   failures: {len(res[n]['failures'])}, e.g. {res[n]['failures'][0]}")
    scale_join_goal(ctx, res, rig.trials)
    return lines


def scale_join_goal(ctx, res, trials):
    """Met when every trial was served and both the p50 and the p99 at
    SCALE_MANY members are within SCALE_JOIN_GOAL x those at SCALE_FEW."""
    many, few = res[SCALE_MANY]["join"], res[SCALE_FEW]["join"]
    text = (f"join p50 and p99 at {SCALE_MANY:,} members within {SCALE_JOIN_GOAL}x of at "
            f"{SCALE_FEW}")
    if len(many) < trials or len(few) < trials:
        ctx.goal("scale", text, False, f"seen {len(many)} and {len(few)} of {trials}")
        return
    r50 = bl.pct(many, 50) / bl.pct(few, 50)
    r99 = bl.pct(many, 99) / bl.pct(few, 99)
    ctx.goal("scale", text, r50 <= SCALE_JOIN_GOAL and r99 <= SCALE_JOIN_GOAL,
             f"p50 {1e3 * bl.pct(many, 50):.2f} vs {1e3 * bl.pct(few, 50):.2f} ms ({r50:.2f}x), "
             f"p99 {1e3 * bl.pct(many, 99):.2f} vs {1e3 * bl.pct(few, 99):.2f} ms ({r99:.2f}x)")


def timed_status(proxy):
    """(monotonic time, /beacon-status?json's first receiver), the time
    the middle of the request's."""
    t = time.monotonic()
    status = proxy.beacon_status()
    return (t + time.monotonic()) / 2, status


def scale_cpu(ctx, rig):
    """The owner child's CPU seconds per second of each beacon proxy, no
    request running, its members renewing every second; and the
    announcements its receiver accepted meanwhile (?json). The status
    reads stay out of the CPU window: at 1,000 members ?json costs the
    child that serves it tens of ms, and that may be the owner."""
    secs = 2.0 if ctx.quick else 10.0
    pids = {n: rig.beacon[n].receiver_pid() for n in rig.sizes}
    before = {n: timed_status(rig.beacon[n]) for n in rig.sizes}
    cpu0 = {n: bl.cpu_seconds(pids[n]) for n in rig.sizes}
    t0 = time.monotonic()
    time.sleep(secs)  # the window measured, not a wait for a condition
    cpu = {n: bl.cpu_seconds(pids[n]) - cpu0[n] for n in rig.sizes}
    dt = time.monotonic() - t0
    out = {}
    for n in rig.sizes:
        after = timed_status(rig.beacon[n])
        accepted = ex.event(after[1], "accepted") - ex.event(before[n][1], "accepted")
        ex.receiver_load(accepted, dt, cpu[n])  # Broken if its CPU time did not move
        out[n] = {"cpu_per_s": cpu[n] / dt,
                  "accepted_per_s": accepted / (after[0] - before[n][0])}
    rig.renewing()
    ctx.raw.setdefault("scale", {})["cpu"] = out
    many, few = out[SCALE_MANY], out[SCALE_FEW]
    net = (many["cpu_per_s"] - few["cpu_per_s"]) / max(
        1e-9, many["accepted_per_s"] - few["accepted_per_s"])
    lines = [f"   c) receiver CPU, the owner child (all its threads, /proc schedstat), "
             f"{secs:g} s, no requests, every member renewing each second:"]
    for n in rig.sizes:
        lines.append(f"   {f'{n:,} members':34}{1e3 * out[n]['cpu_per_s']:>8.2f} ms/s CPU, "
                     f"{out[n]['accepted_per_s']:.0f} announcements/s accepted")
    lines.append(f"   {f'per renewal, {SCALE_MANY:,} less {SCALE_FEW}':34}{1e6 * net:>8.1f} us")
    return lines


# (path, how many members its body lists, the name --record gives it)
STATUS_VIEWS = (("/beacon-status", ex.html_members, "html"),
                ("/beacon-status?json", ex.json_members, "json"),
                ("/beacon-status?metrics", ex.metrics_members, "metrics"))


def scale_status(ctx, rig):
    """Each status view of beacon-1000 and beacon-10, fetched in turn on a
    fresh connection: the medians (of 5 or 20 each); every body must list
    all the members."""
    reps = 5 if ctx.quick else 20
    times = {(n, v): [] for n in rig.sizes for v, _, _ in STATUS_VIEWS}
    size = {}
    for _ in range(reps):
        for n in rig.sizes:
            for view, count, name in STATUS_VIEWS:
                t0 = time.monotonic()
                status, body = rig.beacon[n].get(view)
                times[(n, view)].append(time.monotonic() - t0)
                if status != 200:
                    raise RuntimeError(f"{view} answered {status}")
                bl.record(f"status-{name}-{n}.txt", body)
                listed = count(body)
                if listed < n:
                    raise RuntimeError(f"{view} lists {listed} of {n} members")
                size[(n, view)] = len(body)
    ctx.raw.setdefault("scale", {})["status"] = {f"{n} {v}": xs for (n, v), xs in times.items()}
    lines = [f"   d) status views, {reps} GETs each on a fresh connection, the views and "
             "proxies in turn; median ms (range), body KiB",
             f"   {'':34}" + "".join(f"{v.replace('/beacon-status?', '?'):>24}"
                                     for v, _, _ in STATUS_VIEWS)]
    for n in rig.sizes:
        cells = "".join(f"{1e3 * bl.median(times[(n, v)]):>8.2f} "
                        f"({rng(times[(n, v)], '.1f', 1e3)}) {size[(n, v)] / 1024:>4.0f}"
                        .rjust(24) for v, _, _ in STATUS_VIEWS)
        lines.append(f"   {f'{n:,} members':34}{cells}")
    per = [(bl.median(times[(SCALE_MANY, v)]) - bl.median(times[(SCALE_FEW, v)]))
           / (SCALE_MANY - SCALE_FEW) for v, _, _ in STATUS_VIEWS]
    per = "".join(f"{1e6 * x:>8.1f} us".ljust(24) for x in per)
    lines.append(f"   {f'per member, {SCALE_MANY:,} less {SCALE_FEW}':34}{per}")
    return lines


def scale_memory(ctx, rig):
    """RSS and PSS of every process of each proxy (smaps_rollup, parent
    and children summed) after wrk through it, median of 3 samples (1
    quick); per member: (1,000 - 10) / 990, static and announced."""
    samples = 1 if ctx.quick else 3
    kinds = {"static": rig.static, "beacon": rig.beacon}
    got = {(k, n): [] for k in kinds for n in rig.sizes}
    for _ in range(samples):
        for (k, n) in got:
            p = kinds[k][n]
            load(p, ctx.quick)
            m = proxy_memory(p)
            got[(k, n)].append({"rss": m["rss_kib"] + m["parent_rss_kib"],
                                "pss": m["pss_kib"] + m["parent_pss_kib"],
                                "children": m["children"]})
    med = {key: {f: bl.median([x[f] for x in xs]) for f in ("rss", "pss", "children")}
           for key, xs in got.items()}
    ctx.raw.setdefault("scale", {})["memory"] = {f"{k} {n}": xs for (k, n), xs in got.items()}
    lines = [f"   e) memory, KiB: every process of the proxy (smaps_rollup), after wrk through "
             f"it, median of {samples}",
             f"   {'':34}{'children':>9}{'RSS':>10}{'PSS':>10}"]
    for k, title in (("static", "static"), ("beacon", "announced")):
        for n in rig.sizes:
            m = med[(k, n)]
            lines.append(f"   {f'{n:,} {title} members':34}{m['children']:>9.0f}"
                         f"{m['rss']:>10.0f}{m['pss']:>10.0f}")
        d = SCALE_MANY - SCALE_FEW
        big, small = med[(k, SCALE_MANY)], med[(k, SCALE_FEW)]
        lines.append(f"   {f'  per {title} member':34}{'':9}{(big['rss'] - small['rss']) / d:>10.1f}"
                     f"{(big['pss'] - small['pss']) / d:>10.1f}")
    # what reserving the slots costs: the same 10 members, without and with
    a, b = med[("static", SCALE_FEW)], med[("beacon", SCALE_FEW)]
    lines.append(f"   {f'slots={SCALE_SLOTS}, {SCALE_FEW} announced - static':34}{'':9}"
                 f"{b['rss'] - a['rss']:>10.0f}{b['pss'] - a['pss']:>10.0f}   (the module and "
                 f"{SCALE_SLOTS - SCALE_FEW} free reserved slots)")
    return lines


def scale_restart(ctx, rig):
    """beacon-1000 restarted, its Renewer stopped (so only the restore
    brings the members back): graceful (from the SIGUSR1) and stop/start
    (from `apache2 -k start`) -> all 1,000 in rotation in balancer-manager."""
    p, r = rig.beacon[SCALE_MANY], rig.renewers[SCALE_MANY]
    r.stop()
    out = {}
    try:
        t0 = time.monotonic()
        p.graceful(timeout=30)
        out["graceful"] = rig.wait_rotation(SCALE_MANY, t0, 30, "a graceful restart")
        p.stop(timeout=30)
        t0 = time.monotonic()
        p.start_receiver(timeout=30)
        out["stop/start"] = rig.wait_rotation(SCALE_MANY, t0, 30, "a stop/start")
    finally:
        r.start()
    ctx.raw.setdefault("scale", {})["restart"] = out
    out["first fill"] = rig.fill[SCALE_MANY]
    lines = [f"   f) restore, {SCALE_MANY:,} members, no announcement meanwhile (the sender "
             "stopped): seconds until balancer-manager lists",
             f"   the first and all in rotation (polled every 20 ms){'first':>14}{'all':>8}"]
    for key, title in (("first fill", f"first fill (the sender started: {SCALE_MANY:,} "
                                      "datagrams over 1 s)"),
                       ("graceful", "graceful restart (from SIGUSR1)"),
                       ("stop/start", "stop, then start (from apache2 -k start)")):
        lines.append(f"   {title:60}{out[key][0]:>8.2f}{out[key][1]:>8.2f}")
    return lines


def bench_scale(ctx):
    why = missing_tool("wrk")
    if why:
        raise Skip(f"wrk missing ({why})")
    rig = ScaleRig(ctx)
    try:
        lines = [f"   one backend apache2, one port on {SCALE_MANY:,} loopback addresses "
                 f"({rig.site.addrs[0]}-{rig.site.addrs[SCALE_MANY - 1]}, a vhost each, "
                 f"100-byte file); proxies with {SCALE_MANY:,} and {SCALE_FEW}",
                 f"   members, static BalancerMembers or announced (bench_flood, each url "
                 f"every 1 s, ProxyBeaconBalancer cluster slots={SCALE_SLOTS}, "
                 f"ProxyBeaconTimeout {SCALE_TIMEOUT})"]
        lines += run_parts(ctx, "scale", (
            ("a) throughput", scale_throughput, (ctx, rig)),
            ("c) receiver CPU", scale_cpu, (ctx, rig)),
            ("d) status views", scale_status, (ctx, rig)),
            ("b) join", scale_join, (ctx, rig)),
            ("e) memory", scale_memory, (ctx, rig)),
            ("f) restore", scale_restart, (ctx, rig))))
    finally:
        rig.close()
    for label, p in [(f"scale/static-{n}", rig.static[n]) for n in rig.sizes] + \
            [(f"scale/beacon-{n}", rig.beacon[n]) for n in rig.sizes]:
        ctx.check_log(p, label)
    return lines


# ---- 11. load -------------------------------------------------------------------------

def bench_load(ctx):
    """Balancing by reported load (issue 34): part A, a heterogeneous fleet
    and the factor's stability (bench/load_fleet.py); part B, a cold member
    joins and 1,000 members report load (bench/load_join.py, given this
    module: Skip, run_parts...). Each part is reported on its own."""
    import load_fleet
    import load_join
    parts = [*load_fleet.parts(ctx), *load_join.parts(ctx, sys.modules[__name__])]
    return run_parts(ctx, "load", parts)


# ---- report ------------------------------------------------------------------------

TITLES = {"library": "5. Library: cost of one datagram (bench/bench_datagram.c)",
          "request": "1. Request path: throughput and latency through the proxy",
          "control": "2. Control path: datagrams/s the receiver drains and verifies",
          "convergence": "3. Convergence: join and eviction latency",
          "footprint": "4. Footprint: memory and receiver CPU",
          "churn": "6. Churn: joins into recycled slots, throughput under churn, "
                   "rolling replacement",
          "fanout": "7. Fan-out: one sender to every address of a name",
          "services": f"8. Services: the forged flood at a receiver with {SERVICES} services "
                      "vs one",
          "routing": "9. Routing by context: routed requests vs a static ProxyPass, "
                     "a new context's first request",
          "scale": "10. Scale: 1,000 members in one balancer, announced into reserved "
                   "slots vs static",
          "load": "11. Load: balancing by what the backends report"}
ORDER = ("request", "control", "convergence", "footprint", "library", "churn", "fanout",
         "services", "routing", "scale", "load")


def run_section(ctx, key, fn):
    """The table lines of section key, fn(ctx): what it reports, or why it
    did not run (Skip), found no data (BROKEN) or failed (ERROR)."""
    bl.RECORD["section"] = key
    try:
        return fn(ctx)
    except Skip as e:
        return [f"   not run: {e}"]
    except Broken as e:
        return [ctx.broken(key, str(e))]
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - report, go on
        tb = traceback.format_exc().strip().splitlines()
        first = (str(e).strip().splitlines() or [""])[0]
        log("".join(traceback.format_exc()))
        return [f"   ERROR: {type(e).__name__}: {first[:300]}",
                f"   at {tb[-3].strip() if len(tb) > 2 else ''}"]


def header(ctx, started, load_before, elapsed):
    m = bl.machine()
    apache = bl.tool_version(["/usr/sbin/apache2", "-v"], r"Apache/(\S+)")
    wrk = bl.tool_version(["wrk", "-v"], r"wrk (?:debian/)?(\S+)") if shutil.which("wrk") else None
    hap = bl.haproxy_version() if shutil.which("haproxy") else None
    cmd = "make bench" + (" BENCH_ARGS=--quick" if ctx.quick else "")
    return [
        f"mod_proxy_beacon benchmarks  {time.strftime('%Y-%m-%d %H:%M %Z', time.localtime(started))}"
        f"  ({'QUICK smoke run: figures not for quoting' if ctx.quick else 'full run'})",
        f"command:  {cmd}  (bench/run_bench.py {' '.join(sys.argv[1:])}), {elapsed:.0f} s",
        f"machine:  {m['online']} cores online of {m['cpus']}, {m['model']}, "
        f"{fmt(m['mem_gib'], '.0f')} GiB, {m['kernel']}; shared and noisy: "
        f"load avg {'/'.join(load_before)} before, {'/'.join(bl.loadavg())} after",
        f"software: Apache/{apache} (event MPM), HAProxy {hap or '-'}, wrk {wrk or '-'}, "
        f"net.core.rmem_max {m['rmem_max']}",
        "all traffic on the loopback (127.0.0.0/8); client, proxy and backends share the "
        "same cores",
    ]


def report(ctx, sections, started, load_before):
    elapsed = time.time() - started
    out = header(ctx, started, load_before, elapsed)
    out.append("")
    out.append("Goals")
    for sec, text, met, detail in ctx.goals:
        mark = {True: "met   ", False: "MISSED", None: "n/a   ", BROKEN: "BROKEN"}[met]
        out.append(f"   {mark} {text}: {detail}")
    if not ctx.goals:
        out.append("   (none evaluated)")
    for key in ORDER:
        if key not in sections:
            continue
        out.append("")
        out.append(TITLES[key])
        out += sections[key]
    if ctx.notes:
        out.append("")
        out.append("Notes")
        out += [f"   {n}" for n in ctx.notes]
    return "\n".join(out) + "\n"


def write_atomic(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main():
    doc = __doc__.split("\n\n")  # its first line, and the sections
    ap = argparse.ArgumentParser(description="\n\n".join([doc[0]] + doc[2:4]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run, about two minutes")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--build", default="build", help="the cmake/apxs build tree")
    ap.add_argument("--out", default=str(bl.BENCH / "results" / "latest.txt"))
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--record", metavar="DIR",
                    help="also write the output each figure is extracted from (the last of "
                         "each kind) into DIR/<section>/: tests/bench/fixtures are excerpts")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    bad = set(only) - set(SECTIONS)
    if bad:
        ap.error(f"unknown section(s) {','.join(sorted(bad))}")

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    bl.set_subreaper()
    bl.RECORD["dir"] = args.record
    ctx = Ctx(args)
    started, load_before = time.time(), bl.loadavg()
    if not Path(ctx.module).is_file() and set(only) - {"library"}:
        ctx.notes.append(f"{ctx.module} is not built: run `make module`")
    find_flood(ctx)
    sections = {}
    funcs = {"library": bench_library, "request": bench_request, "control": bench_control,
             "convergence": bench_convergence, "footprint": bench_footprint,
             "churn": bench_churn, "fanout": bench_fanout, "services": bench_services,
             "routing": bench_routing, "scale": bench_scale, "load": bench_load}
    try:
        for key in [k for k in ORDER if k in only]:
            log(f"{key}: start")
            t = time.monotonic()
            try:
                sections[key] = run_section(ctx, key, funcs[key])
            finally:
                ctx.stop_all()
            log(f"{key}: done in {time.monotonic() - t:.0f} s")
    finally:
        ctx.stop_all()
        if args.keep:
            log(f"scratch files kept in {ctx.dir}")
        else:
            shutil.rmtree(ctx.dir, ignore_errors=True)
    text = report(ctx, sections, started, load_before)
    out = Path(args.out)
    write_atomic(out, text)
    raw = {"quick": ctx.quick, "goals": ctx.goals, "notes": ctx.notes, "raw": ctx.raw,
           "machine": bl.machine()}
    write_atomic(out.with_suffix(".json"), json.dumps(raw, indent=1, default=str) + "\n")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
