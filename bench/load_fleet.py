# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Section `load` of run_bench.py, part A (issue 34): a heterogeneous fleet
and the stability of the factor in force.

fleet: three apache2 backends (event MPM, one child of 16, 16 and 8
  threads), each answering GET /w after a fixed service time (a mod_lua
  handler waiting SERVICE_MS, so a request holds a worker as real work
  would), behind four front ends taking turns on the same backends:
  (a) an apache2 proxy with static BalancerMembers, byrequests; (b) the
  same with bybusyness; (c) a beacon receiver whose members the backends
  announce (their mod_proxy_beacon senders, `ProxyBeaconLBFactor auto`,
  every second; lbmethod byrequests, as the manual says); (d) HAProxy,
  leastconn, weights from agent-check (Agents: the same signal as auto).
  wrk --latency with more connections than the fleet has workers.
stability: wrk through (c) only; each member's factor in force read from
  the receiver's /beacon-status?json every second.

Rules as everywhere in bench/: loopback only, bounded polls, only our own
processes signalled, by pid (ctx.track stops them).
"""

import http.client
import os
import socket
import subprocess
import threading
import time

import benchlib as bl
import extract as ex
import run_bench as rb
from extract import Broken

SERVICE_MS = 20                 # the service time of GET /w on every backend
THREADS = (16, 16, 8)           # workers of each backend: the third has half
CONNS = 64                      # wrk's connections: more than the 40 workers
WRK_THREADS = 2
AGENT_SAMPLE = 0.1              # seconds between the agents' reads of ?auto
AGENT_INTER = "1s"              # HAProxy's agent-inter: ProxyBeaconInterval 1
FIXED_FACTOR = "50"             # the senders' factor when this build has no auto
WORK_PATH = "/w"
CONFIGS = ("a", "b", "c", "d")
TITLES = {"a": "(a) static, byrequests",
          "b": "(b) static, bybusyness",
          "c": "(c) beacon, auto, byrequests",
          "d": "(d) HAProxy leastconn+agent"}

# the front ends' own MPM: threads for every connection wrk opens, from
# the start (no child spawned during a round)
PROXY_MPM = ("StartServers 2\nServerLimit 2\nThreadsPerChild 64\nMaxRequestWorkers 128\n"
             "MinSpareThreads 1\nMaxSpareThreads 128\n")

LUA = """function handle(r)
    r.content_type = "text/plain"
    r.usleep(%d)
    r:puts("%s ok\\n")
    return apache2.OK
end
"""


def factor_of(u):
    """The factor for utilization u: libbeacon's mapping
    (include/beacon_load.h), 100 - 90u, u clamped to [0, 1], floor 10."""
    u = min(1.0, max(0.0, u))
    return max(10.0, round(100.0 - 90.0 * u, 2))


class Backend(bl.Httpd):
    """One backend: apache2, event MPM, one child of `threads` workers,
    GET /w answered by a mod_lua handler after SERVICE_MS (the body names
    the backend), /server-status for the agents and for counting requests,
    and mod_proxy_beacon as a sender only: it announces its own url to
    udp_port every second with `ProxyBeaconLBFactor lbfactor`."""

    def __init__(self, workdir, name, threads, module, udp_port, lbfactor):
        super().__init__(workdir=workdir, module=module)
        self.name, self.threads = name, threads
        self.udp_port, self.lbfactor = udp_port, lbfactor
        self.lua_path = self.dir / "htdocs" / "work.lua"
        self.lua_path.write_text(LUA % (SERVICE_MS * 1000, name))
        os.chmod(self.lua_path, 0o644)

    def config_text(self):
        d = self.dir
        user = "User www-data\nGroup www-data\n" if os.geteuid() == 0 else ""
        return "\n".join([
            f"ServerRoot {d}", f"PidFile {self.pid_path}", f"ErrorLog {self.error_log_path}",
            f"DefaultRuntimeDir {d}/run", f"DocumentRoot {d}/htdocs",
            "ServerName 127.0.0.1", f"Listen 127.0.0.1:{self.port}", user.rstrip("\n"),
            *(self._load(m) for m in ("mpm_event", "authz_core", "authz_host", "lua",
                                      "status")),
            f"LoadModule proxy_beacon_module {self.module}",
            "LogLevel warn proxy_beacon:info",
            # a connection per request: with keep-alive, an event MPM whose
            # workers are all busy closes idle keep-alive connections, and
            # a front end that just sent a request on one fails it (502,
            # AH01102). Without, a request waits in the listen backlog
            # until a worker is free: the backend's queue.
            "KeepAlive Off",
            f"StartServers 1\nServerLimit 1\nThreadsPerChild {self.threads}\n"
            f"MaxRequestWorkers {self.threads}\nMinSpareThreads 1\n"
            f"MaxSpareThreads {self.threads}\nListenBacklog 511",
            f"<Directory {d}/htdocs>\n    Require all granted\n</Directory>",
            "LuaScope thread",
            f"LuaMapHandler ^{WORK_PATH}$ {self.lua_path} handle",
            "<Location /server-status>\n    SetHandler server-status\n"
            "    Require ip 127.0.0.1\n</Location>",
            f"ProxyBeaconAddress 127.0.0.1:{self.udp_port}",
            f"ProxyBeaconAdvertise {self.url}",
            "ProxyBeaconInterval 1", f"ProxyBeaconSecret {bl.SECRET}",
            f"ProxyBeaconLBFactor {self.lbfactor}",
        ]) + "\n"

    def status_auto(self):
        """/server-status?auto, parsed (ex.status_auto)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/server-status?auto")
            text = conn.getresponse().read().decode("latin-1")
        finally:
            conn.close()
        bl.record("server-status-auto.txt", text)
        return ex.status_auto(text)


def auto_supported(ctx, workdir):
    """Whether this build's sender takes `ProxyBeaconLBFactor auto`
    (apache2 -t on a backend's config)."""
    b = Backend(workdir, "probe", 8, ctx.module, bl.free_port(), "auto")
    rc, _ = b.check_config()
    return rc == 0


class Agents(bl.Threads):
    """HAProxy's agents, one per backend: a thread reads each backend's
    /server-status?auto every AGENT_SAMPLE s (the busy share of the
    workers other than the one serving it: the utilization auto reads off
    the scoreboard); each agent port answers a connection with the factor of
    the mean utilization since its last answer, "NN%\\n" (a weight of NN %
    of the configured 100), and closes it. It also counts its own
    requests to each backend, which the request counts subtract."""

    def __init__(self, backends):
        self.backends = backends
        self.lock = threading.Lock()
        self.samples = {b.name: [] for b in backends}
        self.last = {b.name: 0.0 for b in backends}
        self.polls = {b.name: 0 for b in backends}
        self.replies = {b.name: [] for b in backends}
        self.errors = []
        self.stopped = threading.Event()
        self.socks = {}
        for b in backends:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            s.listen(16)
            s.settimeout(0.2)
            self.socks[b.name] = s
        self.ports = {n: s.getsockname()[1] for n, s in self.socks.items()}
        self.threads = [threading.Thread(target=self._sample, daemon=True)]
        self.threads += [threading.Thread(target=self._serve, args=(n,), daemon=True)
                         for n in self.socks]

    def _sample(self):
        while not self.stopped.is_set():
            for b in self.backends:
                try:
                    st = b.status_auto()
                    # its own request holds a worker: of the others, how
                    # many are busy (a saturated backend reads 1, not 7/8)
                    u = max(0, st["BusyWorkers"] - 1) / (b.threads - 1)
                    with self.lock:
                        self.samples[b.name].append(u)
                        self.polls[b.name] += 1
                except (OSError, http.client.HTTPException, Broken) as e:
                    self.errors.append(f"{b.name}: {e}")
            self.stopped.wait(AGENT_SAMPLE)

    def reply(self, name):
        """The factor, as the agent says it: the mean of the samples since
        the last reply (the last mean when none came)."""
        with self.lock:
            xs, self.samples[name] = self.samples[name], []
            if xs:
                self.last[name] = sum(xs) / len(xs)
            f = factor_of(self.last[name])
            self.replies[name].append(f)
        return f"{f:.0f}%\n"

    def _serve(self, name):
        s = self.socks[name]
        while not self.stopped.is_set():
            try:
                c, _ = s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with c:
                try:
                    c.sendall(self.reply(name).encode())
                except OSError:
                    pass

    def stop(self, timeout=5):
        super().stop(timeout)
        for s in self.socks.values():
            s.close()

    def own_polls(self):
        with self.lock:
            return dict(self.polls)


class AgentHAProxy(bl.HAProxy):
    """bl.HAProxy with `balance leastconn` and each server's weight from
    its agent (agent-check every AGENT_INTER, weight 100 to start)."""

    def __init__(self, workdir, servers, agent_ports):
        super().__init__(workdir, servers)
        self.agent_ports = agent_ports

    def config_text(self):
        text = super().config_text().replace("balance roundrobin", "balance leastconn")
        lines = []
        for line in text.splitlines():
            if line.strip().startswith("server "):
                name = line.split()[1]
                line += (f" weight 100 agent-check agent-addr 127.0.0.1 "
                         f"agent-port {self.agent_ports[name]} agent-inter {AGENT_INTER}")
            lines.append(line)
        return "\n".join(lines) + "\n"

    def weights(self):
        """{server: (current, initial)} from the runtime API's get weight."""
        out = {}
        for n, _ in self.servers:
            reply = self.api(f"get weight be/{n}")
            bl.record("haproxy-weight.txt", reply)
            out[n] = ex.haproxy_weight(reply)
        return out


class Fleet:
    """The three backends, their agents, and the four front ends."""

    def __init__(self, ctx, lbfactor):
        self.ctx = ctx
        self.udp = bl.free_port()
        self.backends = [ctx.track(Backend(ctx.dir / f"load-b{i}", f"b{i}", t, ctx.module,
                                           self.udp, lbfactor))
                         for i, t in enumerate(THREADS, 1)]
        self.lbfactor = lbfactor
        self.fronts = {}
        self.agents = None

    def start(self):
        ctx = self.ctx
        for b in self.backends:
            b.start()
        urls = [b.url for b in self.backends]
        static = bl.Proxy(ctx.dir / "load-a", members=urls, extra=PROXY_MPM)
        busy = bl.Proxy(ctx.dir / "load-b", members=urls, extra=PROXY_MPM)
        busy.proxy_config = busy.proxy_config.replace(
            "ProxySet growth=4", "ProxySet growth=4 lbmethod=bybusyness")
        mods = busy.modules_config
        busy.modules_config = lambda: mods() + busy._load("lbmethod_bybusyness") + "\n"
        beacon = bl.Proxy(ctx.dir / "load-c", module=ctx.module, receiver=(self.udp, "5"),
                          status_page=True, extra=PROXY_MPM)
        self.fronts["a"] = ctx.track(static).start()
        self.fronts["b"] = ctx.track(busy).start()
        self.fronts["c"] = ctx.track(beacon).start_receiver()
        self.agents = ctx.track(Agents(self.backends)).start()
        why = rb.missing_tool("haproxy")
        if why:
            ctx.notes.append(f"load: (d) HAProxy not measured: haproxy missing ({why})")
        else:
            servers = [(b.name, b.port) for b in self.backends]
            self.fronts["d"] = ctx.track(AgentHAProxy(ctx.dir / "load-d", servers,
                                                      self.agents.ports)).start()
        rb.wait_members(beacon, urls, timeout=30)
        for key, front in self.fronts.items():
            if not rb.serves_all(front.port, [b.name for b in self.backends],
                                 path=WORK_PATH):
                raise RuntimeError(f"{TITLES[key]} does not reach all three backends")
        return self

    def accesses(self):
        """{backend: Total Accesses} now, less the agents' own polls."""
        own = self.agents.own_polls()
        return {b.name: b.status_auto()["Total Accesses"] - own[b.name]
                for b in self.backends}

    def factors(self):
        """{member url: {lbfactor, lbfactor_announced, slow_start}} of the
        receiver (c)."""
        body = self.fronts["c"].beacon_status_body("load-status.json")
        rx = ex.receiver_status(body)
        ex.need(rx["members"], "/beacon-status?json lists no member")
        return ex.member_factors(rx)


def wrk_round(fleet, key, secs):
    """One wrk run through front end key: wrk's figures and the requests
    each backend served meanwhile."""
    before = fleet.accesses()
    res = bl.run_wrk(fleet.fronts[key].port, secs, WRK_THREADS, CONNS, path=WORK_PATH)
    after = fleet.accesses()
    res.pop("raw")
    res["served"] = {n: after[n] - before[n] for n in after}
    return res


def fleet_part(ctx, fleet, auto):
    """Interleaved rounds of the four front ends, the order rotating."""
    rounds, secs, warm = (1, 4, 1) if ctx.quick else (4, 10, 2)
    configs = tuple(k for k in CONFIGS if k in fleet.fronts)
    runs = {k: [] for k in configs}
    weights = []
    for r in range(rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for key in order:
            rb.log(f"load: fleet round {r + 1}/{rounds} {TITLES[key]}")
            bl.run_wrk(fleet.fronts[key].port, warm, WRK_THREADS, CONNS, path=WORK_PATH)
            runs[key].append(wrk_round(fleet, key, secs))
            if key == "d":
                weights.append(fleet.fronts["d"].weights())
    ctx.raw["load_fleet"] = {"runs": runs, "haproxy_weights": weights,
                             "agent_errors": fleet.agents.errors[:5]}
    for key in ("a", "b", "c"):
        ctx.check_log(fleet.fronts[key], f"load/{TITLES[key]}")
    for b in fleet.backends:  # saturated on purpose: AH00484 is no error here
        bad = bl.error_lines(b.error_log(), ("AH00484",))
        if bad:
            ctx.notes.append(f"load/backend {b.name}: {len(bad)} error line(s), e.g. "
                             f"{bad[0][:200]}")
    return fleet_lines(ctx, runs, weights, rounds, secs, warm, auto, fleet)


def col(runs, key, field):
    return [x[field] for x in runs[key] if x[field] is not None]


def fleet_lines(ctx, runs, weights, rounds, secs, warm, auto, fleet):
    names = [b.name for b in fleet.backends]
    caps = "/".join(str(t) for t in THREADS)
    lines = [f"   3 apache2 backends (one child each, {caps} threads; GET /w waits "
             f"{SERVICE_MS} ms in mod_lua: capacity about "
             f"{sum(THREADS) * 1000 // SERVICE_MS} req/s); wrk -t{WRK_THREADS} -c{CONNS} "
             f"-d{secs}s --latency, {rounds} round(s), the order rotating, {warm} s warm-up "
             "before each",
             f"   (c): the senders' ProxyBeaconLBFactor {fleet.lbfactor}"
             + ("" if auto else " (this build has no auto: a fixed factor, not the goal's "
                "configuration)"),
             f"   {'':30}{'req/s median (range)':>24}{'p50 ms':>9}"
             f"{'p99 ms median (range)':>26}{'errors':>8}   served {'/'.join(names)}"]
    med = {k: (None, None) for k in CONFIGS}
    for key in runs:
        rps, p50, p99 = col(runs, key, "rps"), col(runs, key, "p50"), col(runs, key, "p99")
        med[key] = (bl.median(rps), bl.median(p99))
        errs = sum(x["non2xx"] + x["socket_errors"] for x in runs[key])
        served = {n: sum(x["served"][n] for x in runs[key]) for n in names}
        total = sum(served.values()) or 1
        share = "/".join(f"{100 * served[n] / total:.0f}" for n in names)
        title = TITLES[key] if key != "c" or auto else f"(c) beacon, {fleet.lbfactor}, byrequests"
        lines.append(f"   {title:30}{rb.fmt(med[key][0], '.0f'):>8} ({rb.rng(rps, '.0f')})"
                     .ljust(57) + f"{rb.fmt(bl.median(p50), '.1f'):>9}"
                     + f"{rb.fmt(med[key][1], '.1f'):>9} ({rb.rng(p99, '.1f')})".ljust(26)
                     + f"{errs:>8}   {share} %")
    if weights:
        last = weights[-1]
        lines.append("   HAProxy weights from the agents at the end of its rounds: "
                     + ", ".join(f"{n} {'/'.join(str(w[0]) for w in [ws[n] for ws in weights])}"
                                 for n in last))
    fleet_goal(ctx, med, auto)
    return lines


def fleet_goal(ctx, med, auto):
    """(c)'s p99 <= 0.7 x (a)'s and <= min((b), (d)); (c)'s req/s >= (a)'s."""
    text = "heterogeneous fleet: (c) p99 <= 0.7 x (a) and <= min((b), (d)); req/s (c) >= (a)"
    (rps_a, p99_a), (_, p99_b), (rps_c, p99_c), (_, p99_d) = (med[k] for k in CONFIGS)
    if None in (rps_a, p99_a, p99_b, rps_c, p99_c):
        ctx.broken("load", "fleet: a configuration has no wrk figure")
        return
    detail = (f"p99 (c) {p99_c:.1f} ms vs (a) {p99_a:.1f} (x{p99_c / p99_a:.2f}), "
              f"(b) {p99_b:.1f}, (d) {rb.fmt(p99_d)}; req/s (c) {rps_c:.0f} vs "
              f"(a) {rps_a:.0f}")
    if not auto:
        ctx.goal("load", text, None, "not measured: no ProxyBeaconLBFactor auto in this "
                 f"build ({detail}, with a fixed factor)")
        return
    best = min(p for p in (p99_b, p99_d) if p is not None)
    met = p99_c <= 0.7 * p99_a and p99_c <= best and rps_c >= rps_a
    if p99_d is None:
        detail += " (HAProxy not measured)"
    ctx.goal("load", text, met, detail)


def stability_part(ctx, fleet, auto):
    """wrk through (c) for a constant load; each member's factor in force
    (?json lbfactor) read every second after a settling time."""
    settle, secs = (3, 15) if ctx.quick else (5, 60)
    port = fleet.fronts["c"].port
    cmd = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNS}", f"-d{settle + secs + 2}s", "--latency",
           f"http://127.0.0.1:{port}{WORK_PATH}"]
    rb.log(f"load: stability, {secs} s of samples under wrk through (c)")
    samples = {}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        start = time.monotonic() + settle
        for k in range(secs):
            t = start + k
            while time.monotonic() < t:
                time.sleep(min(0.05, max(0.0, t - time.monotonic())))
            for url, f in fleet.factors().items():
                samples.setdefault(url, []).append((f["lbfactor"], f["lbfactor_announced"]))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    if proc.returncode != 0:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {err.strip()[:200]}")
    bl.record("wrk-stability.txt", out)
    w = ex.wrk_figures(out)
    ctx.raw["load_stability"] = {"samples": samples, "wrk": {k: v for k, v in w.items()}}
    lines = [f"   wrk -c{CONNS} through (c) for {settle + secs + 2} s ({w['rps']:.0f} req/s, "
             f"p99 {w['p99']:.1f} ms); each member's factor in force read from ?json every "
             f"second for {secs} s after {settle} s",
             f"   {'member':28}{'in force min-max':>18}{'median':>8}{'spread':>8}"
             f"{'announced min-max':>20}"]
    worst = None
    for url in sorted(samples):
        force = [s[0] for s in samples[url] if s[0] is not None]
        said = [s[1] for s in samples[url] if s[1] is not None]
        st = ctx.figure("load", ex.spread, force, f"lbfactor of {url}")
        if st is None:
            lines.append(f"   {url:28} BROKEN (no lbfactor)")
            continue
        worst = st["spread"] if worst is None else max(worst, st["spread"])
        lines.append(f"   {url:28}{st['min']:>8.2f}-{st['max']:<9.2f}{st['median']:>8.2f}"
                     f"{100 * st['spread']:>7.1f}%"
                     f"{rb.rng(said, '.2f'):>20}")
    text = "stability: each member's factor in force varies by at most 10 % under constant load"
    if worst is None:
        ctx.broken("load", "stability: no member's factor sampled")
    elif not auto:
        ctx.goal("load", text, None, f"not measured: no auto in this build (fixed factor: "
                 f"spread {100 * worst:.1f} %)")
    else:
        ctx.goal("load", text, worst <= 0.10,
                 f"worst (max-min)/median {100 * worst:.1f} % over {secs} s")
    return lines


def parts(ctx):
    """Part A's (label, fn, args) for run_bench.run_parts: the fleet is
    started by the first part that runs and shared by both."""
    state = {}

    def run(fn):
        if rb.missing_tool("wrk"):
            raise rb.Skip("wrk missing (make deps BENCH=1)")
        if "fleet" not in state:
            auto = auto_supported(ctx, ctx.dir / "load-probe")
            state["auto"] = auto
            state["fleet"] = Fleet(ctx, "auto" if auto else FIXED_FACTOR).start()
            if not auto:
                ctx.notes.append("load: this build's sender refuses ProxyBeaconLBFactor "
                                 f"auto: (c) ran with a fixed ProxyBeaconLBFactor "
                                 f"{FIXED_FACTOR}")
        return fn(ctx, state["fleet"], state["auto"])

    return [("a) heterogeneous fleet", run, (fleet_part,)),
            ("b) stability", run, (stability_part,))]
