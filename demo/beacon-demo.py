#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""mod_proxy_beacon, live: backends join a balancer by announcing themselves.

Starts, on 127.0.0.1 only and on free high ports:

  * a proxy apache2 whose balancer://cluster starts EMPTY; mod_proxy_beacon
    receives signed UDP announcements and adds, disables, re-enables members;
  * three backend apache2s that load only mpm_event, authz_core and
    mod_proxy_beacon (as sender) and serve a page naming themselves;
  * a client thread fetching through the proxy at a bounded rate.

Then it stops backend 2 (it sends state=leaving and drops out of rotation at
once), starts it again (it announces and returns), and stops everything it
started, by pid, also on Ctrl-C, SIGTERM and any error. Membership is read
from balancer-manager, as an operator would; nothing tails a log.

    make demo                                 (builds first)
    /usr/bin/python3 demo/beacon-demo.py      [--scripted] [--hold] [--rate N]

--scripted: a bounded non-interactive run (the script is the same; snapshots
instead of in-place refresh) ending with one JSON summary line on stdout.
--hold: after the script, keep the table live until Ctrl-C (try stopping a
backend yourself: kill -TERM <pid from the table>).

Python 3 standard library only. Generated configs and logs live in a temp
directory, removed at the end, kept (and named) after a failure.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APACHE2 = os.environ.get("APACHE2", "/usr/sbin/apache2")
MODULES_DIR = Path("/usr/lib/apache2/modules")
MANAGER_NS = {"h": "http://httpd.apache.org"}
HOST = "127.0.0.1"

BACKENDS = 3
LEAVER = 2                  # the backend that is stopped and restarted
BEACON_TIMEOUT = 2          # ProxyBeaconTimeout, seconds
BEACON_INTERVAL = "500ms"   # ProxyBeaconInterval of the senders
RECENT = 3.0                # "last N s" column
CLIENT_PATH = "/index.html"  # the senders load no mod_dir: no "/" -> index
POLL = 0.2                  # balancer-manager poll period
HOLD = 9.0                  # display time of each phase (pacing, not sync)
JOIN_GAP = 2.0              # between backend starts (pacing)

# Bounds of the waits (each is a poll of a condition, never a fixed sleep).
START_TIMEOUT = 15
JOIN_TIMEOUT = 15
LEAVE_TIMEOUT = BEACON_TIMEOUT + 8
STOP_TIMEOUT = 10
TRAFFIC_TIMEOUT = 15


class DemoError(Exception):
    """A step of the demo failed; the message says which and why."""


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived; carries the signal number."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


# ---- signals: deferred while a process is being registered -------------------

_critical = 0
_pending_signal = None


def _on_signal(signum, _frame):
    global _pending_signal
    if _critical:
        _pending_signal = signum
    else:
        raise Interrupted(signum)


class critical:
    """No Interrupted inside (e.g. between Popen and noting the pid); a signal
    that arrived meanwhile is raised on leaving."""

    def __enter__(self):
        global _critical
        _critical += 1

    def __exit__(self, *exc):
        global _critical, _pending_signal
        _critical -= 1
        signum, _pending_signal = _pending_signal, None
        if not _critical and signum is not None and exc[0] is None:
            raise Interrupted(signum)


def install_signal_handlers():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)


def ignore_signals():
    """During cleanup: it is bounded, and must not itself be cut short."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)


# ---- processes -----------------------------------------------------------------

_given_ports = set()


def free_port():
    """A port free for TCP and UDP on 127.0.0.1, never handed out twice."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind((HOST, 0))
            port = tcp.getsockname()[1]
            if port in _given_ports:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind((HOST, port))
                except OSError:
                    continue
        _given_ports.add(port)
        return port
    raise DemoError("no free TCP+UDP port on 127.0.0.1")


def proc_stat(pid):
    """(state, ppid) of pid, or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def gone(pid):
    stat = proc_stat(pid)
    return stat is None or stat[0] == "Z"


def children_of(pid):
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = proc_stat(int(entry.name))
            if stat and stat[1] == pid and stat[0] != "Z":
                kids.append(int(entry.name))
    return sorted(kids)


def module_path(arg):
    path = arg or os.environ.get("BEACON_MODULE") or REPO / "build/.libs/mod_proxy_beacon.so"
    path = Path(path).resolve()
    if not path.is_file():
        raise DemoError(f"{path} is not built: run `make` (or `make demo`) first")
    return path


class Apache:
    """One private apache2 -DFOREGROUND, our own child, in dir/<name>/.

    The config is written by the caller (config_text); start() waits until the
    port answers HTTP, stop() TERMs the main pid and waits for it and its
    children, by pid."""

    def __init__(self, root, name, port, config):
        self.name, self.port = name, port
        self.dir = root / name
        self.config = config       # callable(self) -> text
        self.proc = None
        self.pids_seen = set()     # every pid of ours, for the summary
        for sub in ("conf", "logs", "run", "htdocs"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)
        if os.geteuid() == 0:
            shutil.chown(self.dir / "run", user="www-data", group="www-data")

    conf = property(lambda self: self.dir / "conf" / "httpd.conf")
    error_log_path = property(lambda self: self.dir / "logs" / "error.log")
    url = property(lambda self: f"http://{HOST}:{self.port}")

    @property
    def pid(self):
        proc = self.proc           # read once: the main thread may clear it
        return proc.pid if proc is not None and proc.poll() is None else None

    def running(self):
        return self.pid is not None

    def base_config(self):
        d = self.dir
        user = "User www-data\nGroup www-data\n" if os.geteuid() == 0 else ""
        return (f"ServerRoot {d}\nPidFile {d}/logs/httpd.pid\n"
                f"ErrorLog {self.error_log_path}\nDefaultRuntimeDir {d}/run\n"
                f"DocumentRoot {d}/htdocs\nServerName {HOST}\n"
                f"Listen {HOST}:{self.port}\nKeepAlive Off\n{user}")

    def error_log(self):
        try:
            return self.error_log_path.read_text(encoding="latin-1")
        except FileNotFoundError:
            return ""

    def log_tail(self, n=15):
        lines = self.error_log().splitlines()[-n:]
        return f"{self.error_log_path} (last lines):\n  " + "\n  ".join(lines)

    def _answers_http(self):
        """`OPTIONS *` is answered by core, never proxied: no noise in logs."""
        try:
            with socket.create_connection((HOST, self.port), timeout=1) as s:
                s.sendall(b"OPTIONS * HTTP/1.0\r\n\r\n")
                return s.recv(16).startswith(b"HTTP/")
        except OSError:
            return False

    def start(self, demo, ready=None):
        self.conf.write_text(self.config(self))
        check = subprocess.run([APACHE2, "-t", "-f", str(self.conf)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=30)
        if check.returncode != 0:
            raise DemoError(f"{self.name}: apache2 -t refused {self.conf}:\n{check.stdout}")
        # setpriv --pdeathsig: should this script be SIGKILLed, apache2 still
        # gets SIGTERM. A new session: Ctrl-C reaches us, and we stop apache2
        # in order instead of it dying under the client's feet.
        cmd = [APACHE2, "-f", str(self.conf), "-DFOREGROUND"]
        if shutil.which("setpriv"):
            cmd = ["setpriv", "--pdeathsig", "TERM", "--"] + cmd
        with critical():
            with open(self.dir / "logs" / "console.out", "ab") as out:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            self.pids_seen.add(self.proc.pid)

        def up():
            if self.proc.poll() is not None:
                raise DemoError(f"{self.name}: apache2 exited {self.proc.returncode} on start\n"
                                + self.log_tail())
            return self._answers_http() and (ready is None or ready())

        demo.wait_for(up, START_TIMEOUT, f"{self.name} to answer on {self.url}")
        self.pids_seen.update(children_of(self.proc.pid))
        return self

    def stop(self, timeout=STOP_TIMEOUT, sig=signal.SIGTERM):
        """sig (SIGTERM: stop; SIGWINCH: graceful-stop, which lets requests
        in flight finish), then wait (bounded) for the main pid and its
        children; SIGKILL what is left. Returns the pids that had to be
        killed."""
        if self.proc is None:
            return []
        if self.proc.poll() is not None:
            self.proc = None
            return []
        pids = [self.proc.pid] + children_of(self.proc.pid)
        self.pids_seen.update(pids)
        os.kill(self.proc.pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.proc.poll()
            if self.proc.returncode is not None and all(gone(p) for p in pids):
                break
            time.sleep(0.02)
        killed = [p for p in pids if not gone(p)]
        for p in killed:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            killed.append(self.proc.pid)
        self.proc = None
        return killed


# ---- configs ---------------------------------------------------------------------

def load(name):
    return f"LoadModule {name}_module {MODULES_DIR}/mod_{name}.so"


def proxy_config(module, udp_port, secret):
    """Receiver: empty balancer, beacon members added by the module."""
    def text(a):
        mods = ["mpm_event", "authz_core", "authz_host", "slotmem_shm", "proxy",
                "proxy_http", "proxy_balancer", "lbmethod_byrequests"]
        return "\n".join([
            a.base_config(),
            *[load(m) for m in mods],
            f"LoadModule proxy_beacon_module {module}",   # after mod_proxy
            # Steady children: an idle-reaped child owning the receiver would
            # hand it off (about 10 s of deafness, see BCN00012).
            "StartServers 2\nServerLimit 4\nThreadsPerChild 25\nMaxRequestWorkers 100",
            "MinSpareThreads 5\nMaxSpareThreads 100",
            "LogLevel warn proxy_beacon:info",
            'LogFormat "%{%T}t %P %>s %{BALANCER_WORKER_NAME}e %U" demo',
            f"CustomLog {a.dir}/logs/access.log demo",
            "<Proxy balancer://cluster>",
            "    ProxySet growth=8",
            "</Proxy>",
            "<Location /balancer-manager>",
            "    SetHandler balancer-manager",
            f"    Require ip {HOST}",
            "</Location>",
            "ProxyPass /balancer-manager !",
            "ProxyPass / balancer://cluster/",
            f"ProxyBeaconListen {HOST}:{udp_port}",
            "ProxyBeaconBalancer cluster",
            f"ProxyBeaconTimeout {BEACON_TIMEOUT}",
            f"ProxyBeaconSecret {secret}",
        ]) + "\n"
    return text


def backend_config(module, udp_port, secret):
    """Sender: no proxy module at all, only ours. One child with a steady
    number of threads, so idle reaping never retires the announcing child."""
    def text(a):
        return "\n".join([
            a.base_config(),
            load("mpm_event"), load("authz_core"),
            f"LoadModule proxy_beacon_module {module}",
            "StartServers 1\nServerLimit 4\nThreadsPerChild 25\nMaxRequestWorkers 100",
            "MinSpareThreads 5\nMaxSpareThreads 50",
            "LogLevel warn",
            "<Location />\n    ForceType text/plain\n</Location>",
            f"ProxyBeaconAddress {HOST}:{udp_port}",
            f"ProxyBeaconAdvertise {a.url}",
            f"ProxyBeaconInterval {BEACON_INTERVAL}",
            f"ProxyBeaconSecret {secret}",
        ]) + "\n"
    return text


# ---- what is observed -----------------------------------------------------------

class Client(threading.Thread):
    """GETs CLIENT_PATH through the proxy at `rate` per second (never faster:
    a late request is not made up for) and counts answers per backend by the
    page's body, which names the backend."""

    def __init__(self, port, pages, rate):
        super().__init__(daemon=True, name="client")
        self.port, self.pages, self.period = port, pages, 1.0 / rate
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.total = {n: 0 for n in pages.values()}
        self.recent = {n: deque() for n in pages.values()}
        self.sent = 0
        self.errors = {}
        self.crash = None

    def _one(self):
        conn = http.client.HTTPConnection(HOST, self.port, timeout=3)
        try:
            conn.request("GET", CLIENT_PATH)
            resp = conn.getresponse()
            body = resp.read().decode("latin-1").strip()
            if resp.status == 200 and body in self.pages:
                return self.pages[body], None
            return None, f"HTTP {resp.status}"
        except (OSError, http.client.HTTPException) as e:
            return None, type(e).__name__
        finally:
            conn.close()

    def run(self):
        try:
            due = time.monotonic()
            while not self.stopping.is_set():
                name, err = self._one()
                now = time.monotonic()
                with self.lock:
                    self.sent += 1
                    if name:
                        self.total[name] += 1
                        self.recent[name].append(now)
                    else:
                        self.errors[err] = self.errors.get(err, 0) + 1
                due = max(due + self.period, now)
                self.stopping.wait(max(0.0, due - time.monotonic()))
        except Exception as e:  # noqa: BLE001 -- reported by the main thread
            self.crash = e

    def snapshot(self):
        now = time.monotonic()
        with self.lock:
            for q in self.recent.values():
                while q and q[0] < now - RECENT:
                    q.popleft()
            return {"sent": self.sent, "errors": dict(self.errors),
                    "total": dict(self.total),
                    "recent": {n: len(q) for n, q in self.recent.items()}}

    def stop(self):
        self.stopping.set()
        if self.is_alive():
            self.join(5)


class Member:
    def __init__(self, url, t):
        self.url = url
        self.first_seen = t
        self.flags = set()
        self.elected = 0
        self.history = []          # (t, "enabled" | "disabled" | "error" ...)
        self.state_since = t

    @property
    def enabled(self):
        return "Ok" in self.flags and not self.flags & {"Dis", "Stop", "Err", "Drn"}

    def summary_state(self):
        if "Stop" in self.flags:
            return "stopped"
        if "Dis" in self.flags:
            return "disabled"
        if "Err" in self.flags:
            return "error"
        if "Drn" in self.flags:
            return "draining"
        return "enabled" if self.enabled else "starting"


class Monitor(threading.Thread):
    """Reads balancer://cluster from balancer-manager every POLL seconds and
    keeps each member's flags and state history; renders the display."""

    def __init__(self, demo):
        super().__init__(daemon=True, name="monitor")
        self.demo = demo
        self.lock = threading.Lock()
        self.members = {}          # url -> Member, in order of appearance
        self.stopping = threading.Event()
        self.poll_error = None
        self.crash = None

    def poll(self):
        proxy = self.demo.proxy
        conn = http.client.HTTPConnection(HOST, proxy.port, timeout=2)
        try:
            conn.request("GET", "/balancer-manager?xml=1",
                         headers={"Referer": f"{proxy.url}/balancer-manager"})
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise DemoError(f"balancer-manager answered {resp.status}")
        finally:
            conn.close()
        root = ET.fromstring(body)
        now = time.monotonic()
        for b in root.iterfind("h:balancers/h:balancer", MANAGER_NS):
            if b.findtext("h:name", namespaces=MANAGER_NS) != "balancer://cluster":
                continue
            for w in b.iterfind("h:workers/h:worker", MANAGER_NS):
                url = w.findtext("h:name", namespaces=MANAGER_NS)
                status = (w.findtext("h:status", namespaces=MANAGER_NS) or "").split()
                elected = int(w.findtext("h:elected", namespaces=MANAGER_NS) or 0)
                with self.lock:
                    m = self.members.get(url)
                    if m is None:
                        m = self.members[url] = Member(url, now)
                    before = m.summary_state() if m.flags else None
                    m.flags, m.elected = set(status), elected
                    after = m.summary_state()
                    if after != before:
                        m.history.append((now, after))
                        m.state_since = now
                        self.demo.member_changed(m, before, after)
            return
        raise DemoError("balancer://cluster is missing from balancer-manager")

    def run(self):
        try:
            tty = self.demo.tty
            next_print = 0.0
            while not self.stopping.is_set():
                try:
                    self.poll()
                    self.poll_error = None
                except (OSError, http.client.HTTPException, ET.ParseError, DemoError) as e:
                    self.poll_error = f"{type(e).__name__}: {e}"
                now = time.monotonic()
                if tty or now >= next_print:
                    self.demo.render()
                    next_print = max(next_print + 1.0, now)
                self.stopping.wait(POLL)
        except Exception as e:  # noqa: BLE001 -- reported by the main thread
            self.crash = e

    def get(self, url):
        with self.lock:
            return self.members.get(url)

    def stop(self):
        self.stopping.set()
        if self.is_alive():
            self.join(5)


# ---- the demo ------------------------------------------------------------------

class Demo:
    def __init__(self, args):
        self.args = args
        self.tty = sys.stdout.isatty() and not args.scripted
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.timeout
        self.phase = "preparing"
        self.events = []
        self.out_lock = threading.Lock()
        self.lines_shown = 0
        self.workdir = None
        self.proxy = None
        self.backends = []         # Apache, index i -> "backend i+1"
        self.client = None
        self.monitor = None
        self.result = {}
        self.watch_backends = True
        self.holding = False       # --hold reached: Ctrl-C is the normal end

    # -- time, events, waits

    def t(self, when=None):
        return (time.monotonic() if when is None else when) - self.t0

    def event(self, text):
        self.events.append(f"{self.t():5.1f}s  {text}")

    def set_phase(self, text):
        self.phase = text
        self.event(text)
        self.render()

    def check_health(self):
        """Fail fast: a thread crashed, or a server we run died."""
        for th in (self.client, self.monitor):
            if th is not None and th.crash is not None:
                raise DemoError(f"{th.name} thread failed: {th.crash!r}")
        for a in [self.proxy] + (self.backends if self.watch_backends else []):
            if a is not None and a.proc is not None and a.proc.poll() is not None:
                raise DemoError(f"{a.name} (pid {a.proc.pid}) exited unexpectedly "
                                f"with {a.proc.returncode}\n{a.log_tail()}")
        if time.monotonic() > self.deadline:
            raise DemoError(f"the whole run exceeded --timeout {self.args.timeout}s")

    def wait_for(self, cond, timeout, what):
        """Poll cond until truthy (bounded); DemoError naming `what` if not."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_health()
            result = cond()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise DemoError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.05)

    def hold(self, seconds, until, timeout, what):
        """Keep the display on this phase for `seconds` (pacing) and until
        `until()` holds (a bounded condition)."""
        end = time.monotonic() + seconds
        self.wait_for(lambda: time.monotonic() >= end and until(), seconds + timeout + 1, what)

    # -- display

    def backend_of(self, url):
        for i, b in enumerate(self.backends):
            if b.url == url:
                return i, b
        return None, None

    def member_changed(self, m, before, after):
        i, _ = self.backend_of(m.url)
        who = f"backend {i + 1}" if i is not None else m.url
        if before is None:
            self.event(f"{who} joined balancer://cluster ({after})")
        else:
            self.event(f"{who}: {before} -> {after}")

    def state_word(self, m, now):
        word = m.summary_state()
        fresh = now - m.state_since < 2.0
        if word == "enabled":
            returned = len([h for h in m.history if h[1] == "enabled"]) > 1
            if fresh:
                return "re-enabled" if returned else "joined"
            return "active"
        if word == "disabled":
            i, b = self.backend_of(m.url)
            if b is not None and not b.running():
                return "disabled (left)"
        return word

    def table(self):
        now = time.monotonic()
        snap = self.client.snapshot() if self.client else None
        p = self.proxy
        lines = [f"mod_proxy_beacon demo   t={self.t():5.1f}s", f"phase:   {self.phase}"]
        if p is not None:
            lines.append(f"proxy:   {p.url}/  (pid {p.pid or '-'})   "
                         f"balancer-manager: {p.url}/balancer-manager")
            lines.append(f"beacons: udp {HOST}:{self.udp_port}   ProxyBeaconTimeout "
                         f"{BEACON_TIMEOUT}s   senders announce every {BEACON_INTERVAL}")
        if snap is not None:
            errs = ", ".join(f"{k} x{v}" for k, v in sorted(snap["errors"].items())) or "none"
            lines.append(f"client:  {self.args.rate:g} req/s GET {CLIENT_PATH}   "
                         f"sent {snap['sent']}   errors: {errs}")
        else:
            lines.append("client:  starts with the first member")
        lines.append("")
        lines.append(f"  {'balancer://cluster':<24} {'backend':<10} {'pid':>7}  "
                     f"{'state':<16} {f'last {RECENT:g}s':>8} {'total':>7} {'elected':>8}")
        rows = []
        with self.monitor.lock:
            for m in self.monitor.members.values():
                i, b = self.backend_of(m.url)
                name = f"backend {i + 1}" if i is not None else "?"
                recent = snap["recent"].get(name, 0) if snap else 0
                total = snap["total"].get(name, 0) if snap else 0
                rows.append(f"  {m.url:<24} {name:<10} {(b.pid if b else None) or '-':>7}  "
                            f"{self.state_word(m, now):<16} {recent:>8} {total:>7} "
                            f"{m.elected:>8}")
        lines += rows or ["  (no members yet: the balancer starts empty)"]
        lines.append(f"  (last {RECENT:g}s, total: the client's answers from each backend; "
                     "elected: balancer-manager's count)")
        if self.monitor and self.monitor.poll_error:
            lines.append(f"  ! balancer-manager: {self.monitor.poll_error}")
        lines.append("")
        lines += ["  " + e for e in self.events[-6:]]
        return lines

    def render(self):
        if self.proxy is None:
            return
        with self.out_lock:
            lines = self.table()
            if self.tty:
                width = shutil.get_terminal_size((120, 24)).columns
                buf = f"\x1b[{self.lines_shown}F" if self.lines_shown else "\x1b[?25l"
                buf += "".join(l[:width - 1] + "\x1b[K\n" for l in lines) + "\x1b[J"
                self.lines_shown = len(lines)
                sys.stdout.write(buf)
            else:
                sys.stdout.write("\n".join(lines) + "\n\n")
            sys.stdout.flush()

    # -- the script

    def run(self):
        module = module_path(self.args.module)
        if not Path(APACHE2).exists():
            raise DemoError(f"{APACHE2} not found (apt-get install apache2, or `make`)")
        self.workdir = Path(tempfile.mkdtemp(prefix="beacon-demo-"))
        os.chmod(self.workdir, 0o755)
        secret = "hex:" + os.urandom(16).hex()     # fresh for every run
        self.udp_port = free_port()

        self.proxy = Apache(self.workdir, "proxy", free_port(),
                            proxy_config(module, self.udp_port, secret))
        self.monitor = Monitor(self)
        self.set_phase("starting the proxy (empty balancer)")
        listening = re.compile(r"BCN00050: listening for beacons on udp 127\.0\.0\.1:%d\b"
                               % self.udp_port)
        self.proxy.start(self, ready=lambda: listening.search(self.proxy.error_log()))
        self.monitor.start()
        self.wait_for(lambda: self.monitor.poll_error is None and self.monitor.members == {}
                      and self.monitor.is_alive(), 5, "balancer-manager to show an empty balancer")

        pages = {}
        for i in range(BACKENDS):
            b = Apache(self.workdir, f"backend{i + 1}", free_port(),
                       backend_config(module, self.udp_port, secret))
            page = f"backend {i + 1} at {b.url}"
            (b.dir / "htdocs" / "index.html").write_text(page + "\n")
            pages[page] = f"backend {i + 1}"
            self.backends.append(b)

        # One at a time, so each join shows; the client starts with the first
        # member (an empty balancer could only answer 503).
        self.set_phase(f"{BACKENDS} backends starting")
        t_start = time.monotonic()
        for i, b in enumerate(self.backends):
            if i:
                self.hold(JOIN_GAP, lambda: True, 0, "pacing")
            b.start(self)
            self.wait_for(lambda: self.is_enabled(b), JOIN_TIMEOUT,
                          f"backend {i + 1} to join balancer://cluster enabled")
            if self.client is None:
                self.client = Client(self.proxy.port, pages, self.args.rate)
                self.client.start()
        joined_s = time.monotonic() - t_start
        self.set_phase(f"{BACKENDS} members joined; the client's requests spread over them")
        self.hold(HOLD, lambda: all(v >= 5 for v in self.client.snapshot()["total"].values()),
                  TRAFFIC_TIMEOUT, "requests to reach every backend")

        leaver = self.backends[LEAVER - 1]
        name = f"backend {LEAVER}"
        # graceful-stop, as in a rolling deploy: requests in flight finish,
        # and the exiting backend says it is leaving
        self.set_phase(f"stopping {name} (graceful-stop, pid {leaver.pid}): "
                       "it sends state=leaving")
        t_stop = time.monotonic()
        killed = leaver.stop(sig=signal.SIGWINCH)
        if killed:
            raise DemoError(f"{name} needed SIGKILL for pids {killed}")
        stopped_s = time.monotonic() - t_stop
        self.wait_for(lambda: self.disabled_since(leaver.url, t_stop), LEAVE_TIMEOUT,
                      f"{name} to be disabled in balancer-manager")
        left_s = self.disabled_since(leaver.url, t_stop) - t_stop
        self.set_phase(f"{name} stopped: out of rotation after {left_s:.2f}s")
        served_at_stop = self.client.snapshot()["total"][name]
        sent_at_stop = self.client.snapshot()["sent"]
        self.hold(HOLD, lambda: self.client.snapshot()["recent"][name] == 0,
                  TRAFFIC_TIMEOUT, f"{name} to fall out of the last-{RECENT:g}s column")
        snap = self.client.snapshot()
        during_absence = snap["total"][name] - served_at_stop
        sent_during_absence = snap["sent"] - sent_at_stop

        self.set_phase(f"restarting {name}")
        t_restart = time.monotonic()
        leaver.start(self)
        self.wait_for(lambda: self.enabled_since(leaver.url, t_restart), JOIN_TIMEOUT,
                      f"{name} to be enabled again")
        back_s = self.enabled_since(leaver.url, t_restart) - t_restart
        self.set_phase(f"{name} restarted (pid {leaver.pid}): back in rotation after "
                       f"{back_s:.2f}s")
        at_return = self.client.snapshot()["total"][name]
        self.hold(HOLD, lambda: self.client.snapshot()["total"][name] - at_return >= 10,
                  TRAFFIC_TIMEOUT, f"{name} to serve requests again")
        after_return = self.client.snapshot()["total"][name] - at_return

        self.result.update({
            "members_joined": [m.url for m in self.monitor.members.values()],
            "backends": {f"backend {i + 1}": b.url for i, b in enumerate(self.backends)},
            "left": {"backend": name, "url": leaver.url, "stop_s": round(stopped_s, 3),
                     "disabled_after_s": round(left_s, 3),
                     "requests_while_away": during_absence,
                     "client_requests_while_away": sent_during_absence},
            "returned": {"backend": name, "url": leaver.url,
                         "enabled_after_s": round(back_s, 3),
                         "requests_after_return": after_return},
            "timings": {"all_joined_s": round(joined_s, 3)},
        })

        if self.args.hold:
            # The user may now stop and start backends by hand: only the
            # proxy and our threads must stay up, for as long as they like.
            self.set_phase("holding: Ctrl-C stops everything")
            self.watch_backends, self.deadline = False, float("inf")
            self.holding = True
            while True:
                self.check_health()
                time.sleep(0.2)

    def is_enabled(self, b):
        m = self.monitor.get(b.url)
        return m is not None and m.enabled

    def _state_since(self, url, t, word):
        m = self.monitor.get(url)
        with self.monitor.lock:
            for when, state in (m.history if m else []):
                if when >= t and state == word:
                    return when
        return None

    def disabled_since(self, url, t):
        return self._state_since(url, t, "disabled")

    def enabled_since(self, url, t):
        return self._state_since(url, t, "enabled")

    # -- the end

    def stop_threads(self):
        for th in (self.client, self.monitor):
            if th is not None:
                th.stop()

    def shutdown(self):
        """Stop every server we started, backends first, then the proxy.
        Every stop is bounded; returns problems (never raises)."""
        problems = []
        for a in self.backends + ([self.proxy] if self.proxy else []):
            try:
                killed = a.stop()
                if killed:
                    problems.append(f"{a.name}: pids {killed} needed SIGKILL")
            except Exception as e:  # noqa: BLE001 -- keep stopping the rest
                problems.append(f"{a.name}: stop failed: {e!r}")
        return problems

    def leftovers(self):
        """Processes whose command line names our work dir (none, we hope)."""
        if self.workdir is None:
            return []
        mark = str(self.workdir).encode()
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if mark in (entry / "cmdline").read_bytes() and not gone(int(entry.name)):
                        left.append(int(entry.name))
                except OSError:
                    pass
        return left


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scripted", action="store_true",
                    help="non-interactive: snapshots, and a final JSON summary line")
    ap.add_argument("--hold", action="store_true",
                    help="after the script, keep running until Ctrl-C")
    ap.add_argument("--rate", type=float, default=20.0, help="client requests/s (default 20)")
    ap.add_argument("--timeout", type=float, default=90.0,
                    help="bound of the whole scripted run, seconds (default 90)")
    ap.add_argument("--module", help="mod_proxy_beacon.so (default build/.libs/, "
                                     "or $BEACON_MODULE)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir even on success")
    args = ap.parse_args()
    if args.scripted and args.hold:
        ap.error("--hold is interactive; it cannot go with --scripted")
    if not 0 < args.rate <= 200:
        ap.error("--rate must be in (0, 200]")

    install_signal_handlers()
    demo = Demo(args)
    error = None
    exit_code = 0
    try:
        demo.run()
    except Interrupted as e:
        if not (demo.holding and e.signum == signal.SIGINT):
            error = f"interrupted by {signal.Signals(e.signum).name}"
            exit_code = 128 + e.signum
    except DemoError as e:
        error = str(e)
        exit_code = 1
    except Exception as e:  # noqa: BLE001 -- still stop everything
        import traceback
        error = "unexpected error:\n" + traceback.format_exc()
        exit_code = 1
    finally:
        ignore_signals()
        demo.stop_threads()
        # The last table shows the state as it was: success, error or signal.
        if demo.proxy is not None:
            demo.phase = ("finished" if exit_code == 0 else "FAILED" if exit_code == 1
                          else "interrupted") + ": stopping every process"
            demo.render()
        if demo.tty:
            sys.stdout.write("\x1b[?25h")
            sys.stdout.flush()
        problems = demo.shutdown()
    failed = exit_code == 1 or bool(problems)
    left = demo.leftovers()
    if left:
        problems.append(f"processes still running with {demo.workdir} in their command "
                        f"line: {left}")
        failed = True
    if failed and not exit_code:
        exit_code = 1

    kept = demo.workdir is not None and (failed or args.keep)
    if demo.workdir is not None and not kept:
        shutil.rmtree(demo.workdir, ignore_errors=True)

    snap = demo.client.snapshot() if demo.client else {"sent": 0, "errors": {}, "total": {}}
    all_pids = sorted(p for a in demo.backends + ([demo.proxy] if demo.proxy else [])
                      for p in a.pids_seen)
    summary = dict(ok=exit_code == 0, error=error, problems=problems,
                   beacon_timeout_s=BEACON_TIMEOUT,
                   duration_s=round(demo.t(), 2), **demo.result,
                   requests=snap["total"], client={"sent": snap["sent"],
                                                   "errors": snap["errors"]},
                   proxy=demo.proxy.url if demo.proxy else None,
                   pids=all_pids, leftover_pids=left,
                   workdir=str(demo.workdir) if demo.workdir else None, workdir_kept=kept)
    err = sys.stderr
    if error:
        print(f"\ndemo: {error}", file=err)
    for p in problems:
        print(f"demo: {p}", file=err)
    if kept:
        print(f"demo: kept configs and logs in {demo.workdir}", file=err)
    if exit_code == 0:
        req = ", ".join(f"{k} {v}" for k, v in snap["total"].items())
        print(f"demo: done in {demo.t():.1f}s; requests served: {req}; client errors: "
              f"{sum(snap['errors'].values())}")
    if all_pids and not left:
        print(f"demo: stopped all {len(all_pids)} processes it started "
              f"(apache2 main and child pids), none left")
    if args.scripted:
        print(json.dumps(summary, sort_keys=True))
    sys.stdout.flush()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
