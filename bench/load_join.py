# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Section load, part B (issue 34): a cold member joining a saturated
balancer, with and without a slow start; and the receiver's CPU with
1,000 members reporting every second a factor that changes each time,
against a constant one. run_bench.py's bench_load runs parts(ctx, rb)
(rb: run_bench itself, whose Skip, run_parts and helpers these use).

The backends of the cold join are this file too, run as its own process:

    /usr/bin/python3 bench/load_join.py backend --port P --name N \\
        [--workers W] [--ms S] [--cold-requests C] [--cold-factor K]

a ThreadingHTTPServer (a thread per connection, keep-alive) whose GET /f
holds one of W workers (a semaphore) for S ms, the first C requests K
times as long, then answers the 100-byte file naming it; GET /stats
answers its counters as JSON (extract.backend_stats), at once. The
service time is the server's, not the client's: requests beyond W wait
in its queue, as they would for a cold JVM's threads.
"""

import argparse
import http.client
import http.server
import json
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
import benchlib as bl  # noqa: E402
import extract as ex  # noqa: E402

# ---- c) a cold member joins ----------------------------------------------------------

JOIN_WORKERS = 8           # each backend serves 8 requests at once
JOIN_MS = 10               # a request's service time once warm
JOIN_COLD_REQUESTS = 300   # the cold member's first 300 requests...
JOIN_COLD_FACTOR = 5       # ...take 5 times as long (50 ms)
JOIN_WARM = 2              # warm members already in the balancer
JOIN_LBFACTOR = "100"      # every member announces it: a slow start's 10 % is 10
JOIN_SLOWSTART = 10        # ProxyBeaconSlowStart, seconds (steps of 1 s)
JOIN_SECONDS = 10          # the window measured after the join
JOIN_CONNECTIONS = 32      # wrk -c: twice the warm members' 16 workers
JOIN_P99_GOAL = 0.5        # p99 with slow start <= 0.5 x without


class Backend(bl.ChildProcess):
    """One backend of the cold join: this file run as `backend`, on a
    port of its own; cold_requests > 0 makes it a cold one."""

    def __init__(self, ctx, name, cold_requests=0):
        self.name, self.port = name, bl.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cmd = [sys.executable, __file__, "backend", "--port", str(self.port),
                    "--name", name, "--workers", str(JOIN_WORKERS), "--ms", str(JOIN_MS),
                    "--cold-requests", str(cold_requests),
                    "--cold-factor", str(JOIN_COLD_FACTOR)]
        self.log_path = ctx.dir / f"load-{name}.log"

    def start(self, timeout=10):
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f"backend {self.name} exited {self.proc.returncode}: "
                                   f"{self.log_path.read_text()[-300:]}")
            try:
                return self.stats()
            except OSError:
                return None
        bl.wait_for(up, timeout, f"backend {self.name} to answer", interval=0.02)
        return self

    def stats(self):
        """Its GET /stats (extract.backend_stats), recorded."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", "/stats")
            body = conn.getresponse().read().decode()
        finally:
            conn.close()
        bl.record("join-backend-stats.json", body)
        return ex.backend_stats(body)


def join_proxy(ctx, label, slowstart):
    """A receiver feeding cluster, members added for good (ProxyBeaconTimeout
    0: nothing to renew), with or without a slow start, and a status page."""
    extra = f"ProxyBeaconSlowStart {slowstart}\n" if slowstart else ""
    p = ctx.track(bl.Proxy(ctx.dir / f"load-join-{label}", module=ctx.module,
                           receiver=(bl.free_port(), 0), status_page=True, growth=16,
                           receiver_extra=extra))
    p.start_receiver()
    p.sender, p.label = bl.Sender(p.udp_port), label
    return p


def announce(proxy, url):
    proxy.sender.send(proxy.sender.datagram(url, extra=[("lbfactor", JOIN_LBFACTOR)]))


def whole_factor(proxy, urls):
    """True once every url is an active member at its whole factor, no
    slow start under way (?json)."""
    status = proxy.beacon_status()
    f = ex.member_factors(status)
    return all(u in f and f[u]["lbfactor"] == float(JOIN_LBFACTOR)
               and f[u]["slow_start"] is None and ex.member(status, u)["state"] == "active"
               for u in urls)


def join_trial(ctx, proxy, warm, k):
    """One join: wrk saturating proxy for JOIN_SECONDS; as soon as its
    requests reach the warm backends, a fresh cold backend announces
    itself. wrk's figures, the cold backend's counters (times from the
    announcement) and the datagram's wall time."""
    cold = ctx.track(Backend(ctx, f"cold{k}-{proxy.label}", JOIN_COLD_REQUESTS)).start()
    try:
        base = sum(b.stats()["requests"] for b in warm)
        cmd = ["wrk", "-t2", f"-c{JOIN_CONNECTIONS}", f"-d{JOIN_SECONDS}s", "--latency",
               f"http://127.0.0.1:{proxy.port}{bl.FILE_PATH}"]
        w = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
        try:
            bl.wait_for(lambda: sum(b.stats()["requests"] for b in warm) >= base + 100,
                        5, "wrk's requests at the warm backends", interval=0.005)
            wall = time.time()
            announce(proxy, cold.url)
            out, err = w.communicate(timeout=JOIN_SECONDS + 60)
        finally:
            if w.poll() is None:
                w.kill()
                w.wait()
        if w.returncode != 0:
            raise RuntimeError(f"wrk failed ({w.returncode}): {out} {err}")
        bl.record("join-wrk.txt", out)
        res = ex.wrk_figures(out)
        s = cold.stats()
        res.update({"url": cold.url, "sent_at": wall, "cold_requests": s["requests"],
                    "cold_first": s["first_at"] and s["first_at"] - wall,
                    "cold_over": s["cold_done_at"] and s["cold_done_at"] - wall})
        # its last word, and gone before the next trial: the balancer is
        # back to the warm members alone. The requests the proxy still had
        # there when wrk stopped are answered before it stops.
        proxy.sender.leave(cold.url)
        bl.wait_for(lambda: ex.member(proxy.beacon_status(), cold.url)["state"] != "active",
                    5, f"{cold.url} out of rotation after state=leaving", interval=0.05)
        bl.wait_for(lambda: cold.stats()["in_flight"] == 0, 10,
                    f"{cold.url} to answer its last requests", interval=0.05)
    finally:
        cold.stop()
    return res


def cold_join(ctx, rb):
    """Trials alternating between a proxy with ProxyBeaconSlowStart and one
    without, the same warm members in both; a fresh cold member each."""
    why = rb.missing_tool("wrk")
    if why:
        raise rb.Skip(f"wrk missing ({why})")
    trials = 1 if ctx.quick else 5
    warm = [ctx.track(Backend(ctx, f"warm{i}")).start() for i in range(JOIN_WARM)]
    proxies = {}
    for label, slowstart in (("slow", JOIN_SLOWSTART), ("plain", 0)):
        proxies[label] = join_proxy(ctx, label, slowstart)
    try:
        for p in proxies.values():
            for b in warm:
                announce(p, b.url)
        # the warm members ramp on the slow proxy too: wait for their whole
        # factor, and meanwhile every child opens its backend connections
        for p in proxies.values():
            bl.run_wrk(p.port, 1 if ctx.quick else 2, 2, JOIN_CONNECTIONS)
        for p in proxies.values():
            bl.wait_for(lambda: whole_factor(p, [b.url for b in warm]), JOIN_SLOWSTART + 10,
                        "the warm members at their whole factor", interval=0.2)
        runs = {label: [] for label in proxies}
        for k in range(trials):
            for label in (("plain", "slow") if k % 2 == 0 else ("slow", "plain")):
                rb.log(f"load: cold join trial {k + 1}/{trials} {label}")
                runs[label].append(join_trial(ctx, proxies[label], warm, k))
        logs = {label: p.log_text(f"join-error-{label}.log") for label, p in proxies.items()}
    finally:
        for p in proxies.values():
            p.sender.close()
    ramps = {label: ctx.figure("load", ex.slow_starts, logs[label]) for label in proxies}
    for label, p in proxies.items():
        ctx.check_log(p, f"load/join-{label}")
    ctx.raw.setdefault("load", {})["cold_join"] = runs
    return cold_join_lines(ctx, rb, runs, ramps, trials)


def cold_join_lines(ctx, rb, runs, ramps, trials):
    """The rows of runs {slow, plain: [trial figures]}, the slow starts
    logged, and the goals."""
    ms = JOIN_MS
    lines = [f"   c) a cold member joins: {JOIN_WARM} warm members (a Python server each: "
             f"{JOIN_WORKERS} workers, {ms} ms a request), wrk -t2 -c{JOIN_CONNECTIONS} "
             f"-d{JOIN_SECONDS}s --latency;",
             f"   as its requests reach them, a fresh cold member (its first "
             f"{JOIN_COLD_REQUESTS} requests {JOIN_COLD_FACTOR * ms} ms) announces "
             f"lbfactor={JOIN_LBFACTOR}, as the warm ones did. {trials} trial(s) per proxy, "
             "alternating",
             f"   {'':24}{'p99 ms median (range)':>24}{'p50 ms median (range)':>24}"
             f"{'req/s':>8}{'failed':>8}   cold member: requests, cold phase over (s)"]
    med = {}
    for label, title in (("slow", f"slow start {JOIN_SLOWSTART} s"), ("plain", "no slow start")):
        xs = runs[label]
        p99, p50 = [x["p99"] for x in xs], [x["p50"] for x in xs]
        med[label] = bl.median(p99)
        failed = sum(x["non2xx"] + x["socket_errors"] for x in xs)
        over = [x["cold_over"] for x in xs]
        over_txt = ("not within the window" if all(o is None for o in over) else
                    f"{bl.median([o for o in over if o is not None]):.2f} "
                    f"({rb.rng([o for o in over if o is not None], '.2f')})"
                    + ("" if None not in over else
                       f", {over.count(None)} not within the window"))
        lines.append(f"   {title:24}" + f"{med[label]:>8.1f} ({rb.rng(p99, '.1f')})".rjust(24)
                     + f"{bl.median(p50):>8.1f} ({rb.rng(p50, '.1f')})".rjust(24)
                     + f"{bl.median([x['rps'] for x in xs]):>8.0f}{failed:>8}   "
                     f"{bl.median([x['cold_requests'] for x in xs]):.0f}, {over_txt}")
    ratio = med["slow"] / med["plain"]
    paired = [a["p99"] / b["p99"] for a, b in zip(runs["slow"], runs["plain"])]
    lines.append(f"   {'with / without':24}{ratio:>8.2f} (per trial {rb.rng(paired, '.2f')})")
    joined = {label: len({x['url'] for x in runs[label]} & set(ramps[label] or {}))
              for label in runs}
    lines.append(f"   slow starts logged (BCN00225) for the cold members: {joined['slow']} of "
                 f"{trials} with, {joined['plain']} of {trials} without")
    ctx.goal("load", f"cold join: p99 of the first {JOIN_SECONDS} s with slow start <= "
             f"{JOIN_P99_GOAL} x without", ratio <= JOIN_P99_GOAL,
             f"{ratio:.2f} ({med['slow']:.1f} vs {med['plain']:.1f} ms, medians of {trials}; "
             f"per trial {rb.rng(paired, '.2f')})")
    failed = {label: sum(x["non2xx"] + x["socket_errors"] for x in xs)
              for label, xs in runs.items()}
    ctx.goal("load", "cold join: 0 failed requests with and without slow start",
             failed["slow"] == 0 and failed["plain"] == 0,
             f"{failed['slow']} with, {failed['plain']} without (wrk's non-2xx and socket "
             "errors)")
    return lines


# ---- d) 1,000 members reporting load: the receiver's CPU ----------------------------

CPU_MEMBERS = 1000
CPU_SLOTS = 1024
CPU_TIMEOUT = 10           # ProxyBeaconTimeout: outlives a sender's restart
CPU_FACTOR = "50"          # the constant factor, and the varying one's first
CPU_VARY = "60"            # the varying one's second: 20 % (16.7 %) apart
CPU_GOAL = 1.2             # varying <= 1.2 x constant


def renewer(ctx, rb, port, urls, mode):
    """bench_flood renewing every url each second (as scale's), announcing
    lbfactor=CPU_FACTOR, or with mode "varying" alternating with CPU_VARY."""
    r = ctx.track(rb.Renewer(ctx, port, urls, f"load-cpu-{mode}"))
    r.cmd += ["--lbfactor", CPU_FACTOR]
    if mode == "varying":
        r.cmd += ["--lbfactor-vary", CPU_VARY]
    return r.start()


def settled(proxy, mode):
    """The factors in force the mode gives: all CPU_FACTOR (constant), or
    some members already at CPU_VARY (varying: their second round). The
    ?json reading, or None."""
    status = proxy.beacon_status_body("cpu-status.json")
    f = ex.member_factors(ex.receiver_status(status))
    if len(f) < CPU_MEMBERS:
        return None
    values = [m["lbfactor"] for m in f.values()]
    if mode == "constant":
        return f if all(v == float(CPU_FACTOR) for v in values) else None
    return f if float(CPU_VARY) in values else None


def cpu_round(ctx, rb, proxy, pid, port, urls, mode, secs):
    """One round: the renewer in mode, the factors settled, then the owner
    child's CPU over secs (the ?json reads outside the window, as scale's);
    then how many members' factor in force changed within 2 s after the
    last reading (the most seen: all but a few for varying, 0 constant)."""
    r = renewer(ctx, rb, port, urls, mode)
    try:
        bl.wait_for(lambda: settled(proxy, mode), 15, f"the {mode} factors in force",
                    interval=0.2)
        before = rb.timed_status(proxy)
        cpu0 = bl.cpu_seconds(pid)
        t0 = time.monotonic()
        time.sleep(secs)  # the window measured, not a wait for a condition
        cpu = bl.cpu_seconds(pid) - cpu0
        dt = time.monotonic() - t0
        after = rb.timed_status(proxy)
        if r.proc.poll() is not None:
            raise RuntimeError(f"bench_flood ({mode}) exited {r.proc.returncode}")
        accepted = ex.event(after[1], "accepted") - ex.event(before[1], "accepted")
        ex.receiver_load(accepted, dt, cpu)  # Broken if its CPU time did not move
        last = ex.member_factors(after[1])
        out = {"cpu_per_s": cpu / dt, "accepted_per_s": accepted / (after[0] - before[0]),
               "in_force_as_announced": sum(1 for m in last.values()
                                            if m["lbfactor"] == m["lbfactor_announced"])}
        # applied: each member announces once a second, so about a second
        # after a reading a varying one's factor in force is the other
        seen = [0]

        def changed():
            seen[0] = max(seen[0], ex.factors_changed(last, ex.member_factors(
                proxy.beacon_status())))
            return seen[0] >= 0.9 * CPU_MEMBERS
        try:
            bl.wait_for(changed, 2.0, "90 % of the members' factors changed", interval=0.1)
        except AssertionError:
            pass  # a figure: how many changed (none, for constant factors)
        out["changed_after"] = seen[0]
        return out
    finally:
        r.stop()


def load_cpu(ctx, rb):
    """Rounds alternating constant / varying factors (the order reversed
    every other round), one receiver with CPU_MEMBERS members."""
    if not ctx.flood:
        raise rb.Skip(ctx.flood_error or "no flood sender")
    rounds, secs = (1, 3.0) if ctx.quick else (3, 10.0)
    port = bl.free_port()  # nothing listens there: no request is made
    urls = [f"http://{a}:{port}" for a in rb.scale_addresses(CPU_MEMBERS, 104)]
    udp = bl.free_port()
    proxy = ctx.track(bl.Proxy(ctx.dir / "load-cpu", module=ctx.module,
                               receiver=(udp, CPU_TIMEOUT), status_page=True,
                               slots=CPU_SLOTS)).start_receiver(timeout=30)
    pid = proxy.receiver_pid()
    runs = {"constant": [], "varying": []}
    for k in range(rounds):
        for mode in (("constant", "varying") if k % 2 == 0 else ("varying", "constant")):
            rb.log(f"load: receiver CPU round {k + 1}/{rounds} {mode}")
            runs[mode].append(cpu_round(ctx, rb, proxy, pid, udp, urls, mode, secs))
    ctx.check_log(proxy, "load/cpu")
    ctx.raw.setdefault("load", {})["cpu"] = runs
    return load_cpu_lines(ctx, rb, runs, rounds, secs)


def load_cpu_lines(ctx, rb, runs, rounds, secs):
    med = {m: bl.median([x["cpu_per_s"] for x in xs]) for m, xs in runs.items()}
    lines = [f"   d) receiver CPU, the owner child (all its threads), {secs:g} s, no requests: "
             f"{CPU_MEMBERS:,} members (slots={CPU_SLOTS}), each",
             f"   renewed every second by bench_flood --batch 1; {rounds} round(s) each, "
             "alternating",
             f"   {'':34}{'ms/s CPU median (range)':>26}{'announcements/s':>17}"
             f"{'us each':>9}   factors in force"]
    for mode, title in (("constant", f"constant lbfactor={CPU_FACTOR}"),
                        ("varying", f"alternating {CPU_FACTOR} / {CPU_VARY}")):
        xs = runs[mode]
        cpu = [x["cpu_per_s"] for x in xs]
        acc = bl.median([x["accepted_per_s"] for x in xs])
        per = 1e6 * med[mode] / acc if acc else None
        note = (f"{bl.median([x['changed_after'] for x in xs]):.0f} of {CPU_MEMBERS:,} changed "
                "within 2 s after the window")
        lines.append(f"   {title:34}"
                     + f"{1e3 * med[mode]:>8.2f} ({rb.rng(cpu, '.2f', 1e3)})".rjust(26)
                     + f"{acc:>17.0f}{rb.fmt(per):>9}   {note}")
    ratio = med["varying"] / med["constant"]
    paired = [b["cpu_per_s"] / a["cpu_per_s"] for a, b in zip(runs["constant"], runs["varying"])]
    lines.append(f"   {'varying / constant':34}{ratio:>8.2f} (per round {rb.rng(paired, '.2f')})")
    applied = min(x["changed_after"] for x in runs["varying"])
    ctx.goal("load", f"{CPU_MEMBERS:,} members reporting a changing factor every second: "
             f"receiver CPU <= {CPU_GOAL} x a constant factor's",
             ratio <= CPU_GOAL if applied else False,
             f"{ratio:.2f} ({1e3 * med['varying']:.2f} vs {1e3 * med['constant']:.2f} ms/s, "
             f"medians of {len(paired)}; per round {rb.rng(paired, '.2f')})"
             + ("" if applied else "; a round with no factor changed in force: not applied"))
    return lines


def parts(ctx, rb):
    """Part B's (label, fn, args) for rb.run_parts."""
    return (("c) cold join", cold_join, (ctx, rb)),
            ("d) load cpu", load_cpu, (ctx, rb)))


# ---- the backend, run as its own process ---------------------------------------------

def serve(argv):
    ap = argparse.ArgumentParser(prog="load_join.py backend")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--workers", type=int, default=JOIN_WORKERS)
    ap.add_argument("--ms", type=float, default=JOIN_MS)
    ap.add_argument("--cold-requests", type=int, default=0)
    ap.add_argument("--cold-factor", type=float, default=JOIN_COLD_FACTOR)
    args = ap.parse_args(argv)
    body = bl.file_body(args.name).encode()
    workers = threading.BoundedSemaphore(args.workers)
    lock = threading.Lock()
    state = {"requests": 0, "cold_requests": args.cold_requests, "cold_done": 0,
             "first_at": None, "cold_done_at": None, "in_flight": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the proxy's connections are
        disable_nagle_algorithm = True  # headers and body are two writes

        def log_message(self, *args):
            pass

        def answer(self, payload, ctype):
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            if self.path == "/stats":
                with lock:
                    payload = json.dumps(state).encode()
                return self.answer(payload, "application/json")
            with lock:
                state["in_flight"] += 1
            try:
                self.serve_file()
            finally:
                with lock:
                    state["in_flight"] -= 1

        def serve_file(self):
            with workers:
                with lock:
                    n = state["requests"]
                    state["requests"] += 1
                    if state["first_at"] is None:
                        state["first_at"] = time.time()
                cold = n < args.cold_requests
                time.sleep(args.ms * (args.cold_factor if cold else 1) / 1e3)
                if cold:
                    with lock:
                        state["cold_done"] += 1
                        if state["cold_done"] == args.cold_requests:
                            state["cold_done_at"] = time.time()
            return self.answer(body, "text/plain")

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)  # a client hanging up is none

    Server(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    if sys.argv[1:2] != ["backend"]:
        sys.exit(__doc__)
    serve(sys.argv[2:])
