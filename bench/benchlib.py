# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Infrastructure of the end-to-end benchmarks (bench/run_bench.py).

Private apache2 instances come from the integration tests' Httpd class
(tests/integration/httpd.py), reused, not copied: the benchmarks start
their proxies exactly as the tests do. Added here: static backends (one
apache2 serving a 100-byte file per port), a private HAProxy, a raw HTTP
poller, wrk, and readers of /proc (UDP socket drops, CPU time, memory).

Rules, as in the tests: traffic only to 127.0.0.1; every wait is a bounded
poll; only processes started here are signalled, by pid.
"""

import http.client
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

import sys  # noqa: E402  (path set-up for the tests' helpers)

sys.path.insert(0, str(REPO / "tests" / "integration"))

import beacon_wire as bw  # noqa: E402
import extract as ex  # noqa: E402  (bench/, this file's directory)
from beacon_env import SECRET, receiver_config, sender_httpd  # noqa: E402,F401
# re-exported for run_bench.py
from httpd import (ChildProcess, Httpd, error_lines, free_port,  # noqa: E402,F401
                   logged_at, pid_gone, set_subreaper, wait_for)

CLK_TCK = os.sysconf("SC_CLK_TCK")
FILE_SIZE = 100            # bytes of the static file every backend serves
FILE_PATH = "/f"
KEEPALIVE = "KeepAlive On\nMaxKeepAliveRequests 0\nKeepAliveTimeout 30\n"

# run_bench.py --record DIR: the output each figure is extracted from, the
# first and the last of each kind, as first-NAME and NAME under
# DIR/<section>/ (tests/bench/fixtures are excerpts of these).
RECORD = {"dir": None, "section": None}


def record(name, text):
    if RECORD["dir"] is None:
        return
    d = Path(RECORD["dir"]) / (RECORD["section"] or "other")
    d.mkdir(parents=True, exist_ok=True)
    text = text if isinstance(text, str) else text.decode("latin-1")
    if not (d / f"first-{name}").exists():
        (d / f"first-{name}").write_text(text)
    (d / name).write_text(text)


# ---- statistics ---------------------------------------------------------------

def pct(values, p):
    """Nearest-rank percentile (p in 0..100) of values; None if empty."""
    if not values:
        return None
    s = sorted(values)
    k = max(1, math.ceil(p / 100 * len(s)))
    return s[k - 1]


def median(values):
    return statistics.median(values) if values else None


# ---- backends -----------------------------------------------------------------

def file_body(name):
    """The 100-byte file a backend serves: its name, a space, padding."""
    text = (name + " ").ljust(FILE_SIZE - 1, "x") + "\n"
    assert len(text) == FILE_SIZE, name
    return text


def body_name(body):
    """The backend name in a response body (bytes), or None."""
    if not body:
        return None
    return body.split(b" ", 1)[0].decode("latin-1")


# A small event MPM for backends started by the dozen (one process, 32
# threads): the churn section's rolling replacement runs one per member.
SMALL_MPM = ("StartServers 1\nServerLimit 1\nThreadsPerChild 32\nMaxRequestWorkers 32\n"
             "MinSpareThreads 1\nMaxSpareThreads 32")
# A roomier one for a backend behind many members: with the defaults (3
# children of 25 threads) a child whose threads are all busy closes its
# idle keep-alive connections, and a proxy that just sent a request on one
# logs AH01102 (seen with static members, no module, under wrk -c32).
BIG_MPM = ("StartServers 2\nServerLimit 4\nThreadsPerChild 64\nMaxRequestWorkers 256\n"
           "MinSpareThreads 64\nMaxSpareThreads 256\nAsyncRequestWorkerFactor 4")


class Site(Httpd):
    """A static backend: one apache2 (event MPM), one vhost per port, each
    serving /f, a 100-byte file naming the vhost. No access log. mpm: MPM
    directives instead of the defaults (SMALL_MPM, BIG_MPM). addresses:
    one loopback address per name instead, all on one port (a vhost per
    address: distinct origins 127.0.x.y:PORT of one server)."""

    def __init__(self, workdir, names, mpm="", addresses=None):
        self.names = list(names)
        self.mpm_config = mpm
        if addresses:
            self.addrs = list(addresses)
            self.ports = [free_port()] * len(self.names)
        else:
            self.addrs = ["127.0.0.1"] * len(self.names)
            self.ports = [free_port() for _ in self.names]
        assert len(self.addrs) == len(self.names)
        super().__init__(workdir=workdir, port=self.ports[0], module=None)
        for name in self.names:
            d = self.dir / "htdocs" / name
            d.mkdir(parents=True, exist_ok=True)
            (d / FILE_PATH.lstrip("/")).write_text(file_body(name))
            os.chmod(d, 0o755)
        os.chmod(self.dir / "htdocs", 0o755)

    def member_url(self, i):
        return f"http://{self.addrs[i]}:{self.ports[i]}"

    def _answers_http(self):
        """Readiness: the first vhost's listener answers (Httpd's probe
        connects to 127.0.0.1, which a site on other addresses lacks)."""
        try:
            with socket.create_connection((self.addrs[0], self.ports[0]), timeout=2) as s:
                s.sendall(b"OPTIONS * HTTP/1.0\r\n\r\n")
                return s.recv(16).startswith(b"HTTP/")
        except OSError:
            return False

    def add_file(self, path):
        """Serve the 100-byte file at path too (e.g. /hot/app/f), on
        every port; static files, so also while running."""
        for name in self.names:
            f = self.dir / "htdocs" / name / path.lstrip("/")
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(file_body(name))
            for d in [f.parent] + list(f.parent.parents):
                if d == self.dir / "htdocs":
                    break
                os.chmod(d, 0o755)

    def config_text(self):
        d = self.dir
        user = "User www-data\nGroup www-data\n" if os.geteuid() == 0 else ""
        lines = [
            f"ServerRoot {d}", f"PidFile {self.pid_path}",
            f"ErrorLog {self.error_log_path}", f"DefaultRuntimeDir {d}/run",
            f"DocumentRoot {d}/htdocs", "ServerName 127.0.0.1", user.rstrip("\n"),
            "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so",
            "LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so",
            "LogLevel warn", KEEPALIVE.rstrip("\n"), self.mpm_config,
            f"<Directory {d}/htdocs>\n    Require all granted\n</Directory>",
        ]
        # a vhost without ServerName costs a reverse DNS lookup of its
        # address at start: seconds each for 127.0.100.x
        for name, addr, port in zip(self.names, self.addrs, self.ports):
            lines += [f"Listen {addr}:{port}",
                      f"<VirtualHost {addr}:{port}>\n    ServerName {addr}\n"
                      f"    DocumentRoot {d}/htdocs/{name}\n</VirtualHost>"]
        return "\n".join(l for l in lines if l) + "\n"

    def begin_graceful_stop(self):
        """`apache2 -k graceful-stop` by signal (SIGWINCH to our own parent
        pid): the listeners close at once, requests in flight finish. Returns
        at once: the pids that are to exit (finish_stop waits for them)."""
        if not self.running():
            return []
        pids = [self.pid] + self.child_pids()
        os.kill(self.pid, signal.SIGWINCH)
        return pids

    def listening(self):
        """True while the first port accepts connections."""
        try:
            with socket.create_connection((self.addrs[0], self.ports[0]), timeout=1):
                return True
        except OSError:
            return False

    def finish_stop(self, pids, timeout=10):
        """Waits until pids (begin_graceful_stop's) are gone; after timeout,
        stop() (TERM, then KILL) and an AssertionError."""
        try:
            wait_for(lambda: all(pid_gone(p) for p in pids), timeout,
                     f"apache2 pids {pids} to exit after SIGWINCH", interval=0.01)
        except AssertionError:
            self.stop(timeout)
            raise
        self.pid = None


STATUS_PAGE = """<Location /beacon-status>
    SetHandler beacon-status
    Require ip 127.0.0.1
</Location>
"""


def service_names(n):
    """The services of a receiver with n (s01, s02, ...)."""
    return [f"s{i:02d}" for i in range(1, n + 1)]


def service_key(name):
    """A service's own key (secret=): distinct for each, not SECRET."""
    return f"hex:{int(name[1:]) + 0xbe000000:032x}"


def services_config(names):
    """The ProxyBeaconBalancer lines of a receiver feeding balancer://NAME
    for each service NAME, each with its own key."""
    return "".join(f"ProxyBeaconBalancer {n} service={n} secret={service_key(n)}\n"
                   for n in names)


class Proxy(Httpd):
    """A private apache2 reverse proxy: balancer://cluster on /, keep-alive
    for clients, no access log. receiver=(udp_port, timeout) loads the
    beacon receiver (module must then be the .so's path); receiver_extra:
    more receiver directives (ProxyBeaconMaxSkew, ...). status_page=True adds
    /beacon-status (the module's handler; beacon_status() reads its ?json).
    services=N: the receiver feeds N balancers instead of cluster, one per
    service (service_names(N), balancer://sNN, each its own key). slots=N:
    cluster reserves N member slots (ProxyBeaconBalancer cluster slots=N).
    secret: the receiver's ProxyBeaconSecret (derive:... for a master)."""

    def __init__(self, workdir, module=None, members=(), growth=4, receiver=None,
                 loglevel=None, extra="", receiver_extra="", status_page=False,
                 services=0, slots=0, secret=SECRET):
        tail = ""
        names = service_names(services)
        if receiver:
            cluster = f"cluster slots={slots}" if slots else "cluster"
            tail = receiver_config(receiver[0], timeout=receiver[1], secret=secret,
                                   balancer=None if names else cluster,
                                   extra=services_config(names) + receiver_extra)
        if status_page:
            tail = STATUS_PAGE + tail
        if loglevel is None:
            loglevel = "warn proxy_beacon:info" if module else "warn"
        super().__init__(workdir=workdir, module=module, growth=growth,
                         members=members, loglevel=loglevel,
                         extra_config=KEEPALIVE + extra, tail_config=tail)
        self.proxy_config += "".join(self.balancer_block(n, growth) for n in names)
        if status_page:
            self.proxypass_config = ("ProxyPass /balancer-manager !\n"
                                     "ProxyPass /beacon-status !\n"
                                     "ProxyPass / balancer://cluster/\n")
        self.udp_port = receiver[0] if receiver else None
        self.status_retries = 0

    def beacon_status(self):
        """The first receiver of /beacon-status?json (needs status_page)."""
        return ex.receiver_status(self.beacon_status_body())

    def service_status(self, name="status.json"):
        """Every balancer of /beacon-status?json with its service and its
        mac mismatches (ex.service_receivers; needs status_page); the body
        is recorded as name."""
        return ex.service_receivers(self.beacon_status_body(name))

    def beacon_status_body(self, name="status.json"):
        """/beacon-status?json's body, also recorded as name. A
        connection closed without an answer is tried again, twice, and
        counted in status_retries (a child that exited under the request)."""
        for attempt in range(3):
            try:
                status, body = self.get("/beacon-status?json")
                break
            except (OSError, http.client.HTTPException):
                if attempt == 2:
                    raise
                self.status_retries += 1
                time.sleep(0.05)
        if status != 200:
            raise RuntimeError(f"/beacon-status?json answered {status}: {body[:200]}")
        record(name, body)
        return body

    def log_config(self):
        return f"LogLevel {self.loglevel}\n"

    def start_receiver(self, timeout=15):
        """Start, then wait until the receiver is bound."""
        self.start()
        if self.udp_port:
            self.wait_log(r"BCN00050: listening for beacons on udp 127\.0\.0\.1:%d"
                          % self.udp_port, timeout=timeout, since=0)
        return self

    def members(self):
        return self.balancer_members()

    def receiver_pid(self, timeout=5):
        """The child that owns the receiver: owner_pid of /beacon-status?json
        (needs status_page), once it holds the receiver's UDP socket. Every
        child holds the socket (/proc/<pid>/fd), so the first one found
        was, as often as not, a child that never reads it: its CPU time,
        the flood's cost, stayed at 0."""
        inode = wait_for(lambda: udp_socket(self.udp_port) and
                         udp_socket(self.udp_port)["inode"], timeout,
                         f"udp socket on port {self.udp_port}")
        target = f"socket:[{inode}]"

        def owner():
            pid = ex.receiver_owner(self.beacon_status())
            try:
                fds = os.listdir(f"/proc/{pid}/fd") if pid in self.child_pids() else []
                return pid if any(os.readlink(f"/proc/{pid}/fd/{fd}") == target
                                  for fd in fds) else None
            except OSError:
                return None
        return wait_for(owner, timeout, f"the receiver's owner child holding {target}")

    def count_log(self, regex):
        return ex.log_count(self.error_log(), regex)

    def log_text(self, name):
        """The error log, also recorded as name (run_bench.py --record)."""
        text = self.error_log()
        record(name, text)
        return text


def stop_quietly(server):
    """Stop a Httpd/HAProxy; return an error text instead of raising."""
    try:
        server.stop()
        return None
    except Exception as e:  # noqa: BLE001 - a report, not a test
        return f"{type(server).__name__} stop: {e}"


# ---- announcements --------------------------------------------------------------

class Sender:
    """Signed announcements over one UDP socket, strictly rising ts."""

    def __init__(self, port, secret=SECRET):
        self.addr = ("127.0.0.1", port)
        self.secret = secret
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.last_ts = 0
        self.lock = threading.Lock()

    def datagram(self, url, **fields):
        """Signed now (pure-Python SipHash takes ~0.1 ms), sent later."""
        with self.lock:
            self.last_ts = max(bw.now_usec(), self.last_ts + 1)
            ts = self.last_ts
        return bw.announce(self.secret, url=url, ts=ts, host="bench", **fields)

    def send(self, datagram):
        self.sock.sendto(datagram, self.addr)

    def announce(self, url):
        self.send(self.datagram(url))

    def leave(self, url):
        """A backend's last word when it stops: state=leaving."""
        self.send(self.datagram(url, state="leaving"))

    def close(self):
        self.sock.close()


class Heartbeat:
    """Announces urls every period seconds from a thread; counts sends."""

    def __init__(self, sender, urls, period):
        self.sender, self.urls, self.period = sender, list(urls), period
        self.sent = 0
        self.lock = threading.Lock()  # held: no announcement goes out
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stopped.is_set():
            with self.lock:
                for u in self.urls:
                    self.sender.announce(u)
                    self.sent += 1
            self.stopped.wait(self.period)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopped.set()
        self.thread.join(5)


class Threads:
    """A group of threads, self.threads, that run until self.stopped (an
    Event) is set: start() starts them, stop() sets it and joins them."""

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self, timeout=10):
        self.stopped.set()
        for t in self.threads:
            t.join(timeout)


# ---- HTTP client -----------------------------------------------------------------

class Poller:
    """GET path (/f) on one keep-alive connection, as fast as Python allows
    (about 0.2-0.5 ms a round trip through a local proxy)."""

    def __init__(self, port, path=FILE_PATH, headers=()):
        self.port = port
        extra = "".join(f"{h}\r\n" for h in headers)
        self.request_bytes = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode()
        self.sock = None
        self.buf = b""
        self.last_rtt = None

    def _connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = None

    def _recv(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed by peer")
        self.buf += data

    def _read(self):
        while b"\r\n\r\n" not in self.buf:
            self._recv()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status = int(head.split(b" ", 2)[1])
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        if not m:
            raise ConnectionError("response without Content-Length")
        n = int(m.group(1))
        while len(self.buf) < n:
            self._recv()
        body, self.buf = self.buf[:n], self.buf[n:]
        if re.search(rb"(?im)^connection:\s*close", head):
            self.close()
        return status, body

    def get_strict(self):
        """(status, body) with no retry: a connection closed or reset under
        a request raises (and the next call connects anew)."""
        try:
            if self.sock is None:
                self._connect()
            self.sock.sendall(self.request_bytes)
            return self._read()
        except (OSError, ConnectionError):
            self.close()
            raise

    def get(self):
        """(status, body); reconnects once if the connection was closed."""
        try:
            return self.get_strict()
        except (OSError, ConnectionError):
            return self.get_strict()


# ---- HAProxy ---------------------------------------------------------------------

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def haproxy_version():
    try:
        out = subprocess.run([HAPROXY, "-v"], capture_output=True, text=True,
                             timeout=10).stdout
        return out.split("\n", 1)[0].replace("HAProxy version ", "").split(" ")[0]
    except (OSError, subprocess.SubprocessError):
        return "?"


class HAProxy(ChildProcess):
    """A private haproxy in the foreground (-db), our own child process:
    frontend on 127.0.0.1:port, backend `be` (roundrobin) with servers, and
    an admin stats socket for the runtime API."""

    def __init__(self, workdir, servers):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.socket_path = self.dir / "admin.sock"
        self.conf_path = self.dir / "haproxy.cfg"
        self.log_path = self.dir / "haproxy.out"
        self.servers = list(servers)  # (name, port)
        self.proc = None

    def config_text(self):
        lines = ["global", f"    stats socket {self.socket_path} level admin",
                 "    maxconn 2000",
                 "defaults", "    mode http", "    timeout connect 5s",
                 "    timeout client 30s", "    timeout server 30s",
                 "    option http-keep-alive",
                 "frontend fe", f"    bind 127.0.0.1:{self.port}",
                 "    default_backend be",
                 "backend be", "    balance roundrobin"]
        lines += [f"    server {n} 127.0.0.1:{p}" for n, p in self.servers]
        return "\n".join(lines) + "\n"

    def start(self, timeout=10):
        self.conf_path.write_text(self.config_text())
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([HAPROXY, "-f", str(self.conf_path), "-db"],
                                         stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

        def up():
            if self.proc.poll() is not None:
                raise AssertionError("haproxy exited %s: %s"
                                     % (self.proc.returncode, self.log_path.read_text()))
            try:
                return "Name:" in self.api("show info") and Poller(self.port).get()
            except OSError:
                return False
        wait_for(up, timeout, "haproxy to answer")
        return self

    def connect_api(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(str(self.socket_path))
        return s

    @staticmethod
    def read_reply(s):
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
        s.close()
        return b"".join(chunks).decode("latin-1")

    def api(self, command):
        s = self.connect_api()
        s.sendall(command.encode() + b"\n")
        return self.read_reply(s)




# ---- wrk -------------------------------------------------------------------------

def run_wrk(port, seconds, threads=2, connections=32, path=FILE_PATH, headers=()):
    """One wrk run against path; a dict with rps, p50/p90/p99 (ms), errors
    (extract.wrk_figures), the command and wrk's output (raw)."""
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for h in headers:
        cmd += ["-H", h]
    cmd.append(f"http://127.0.0.1:{port}{path}")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if r.returncode != 0:
        raise RuntimeError(f"wrk failed ({r.returncode}): {r.stdout} {r.stderr}")
    record("wrk.txt", r.stdout)
    res = ex.wrk_figures(r.stdout)
    res.update({"cmd": " ".join(cmd), "raw": r.stdout})
    return res


# ---- /proc -----------------------------------------------------------------------

def udp_socket(port, host="127.0.0.1"):
    """The IPv4 UDP socket bound to host:port from /proc/net/udp:
    {inode, rx_queue (bytes), drops}, or None."""
    want = "%08X:%04X" % (int.from_bytes(socket.inet_aton(host), "little"), port)
    text = Path("/proc/net/udp").read_text()
    record("proc-net-udp.txt", text)
    return ex.udp_row(text, want)


def udp_socket_buffer(port):
    """The receive buffer the kernel gave the socket on 127.0.0.1:port
    (ss's skmem rb), as text, e.g. "8 MiB"."""
    try:
        out = subprocess.run(["ss", "-uamnH", f"sport = :{port}"], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    m = re.search(r"\brb(\d+)", out)
    if not m:
        return "?"
    rb = int(m.group(1))
    return f"{rb / 2**20:g} MiB" if rb >= 2**20 else f"{rb / 1024:g} KiB"


def udp_snmp():
    """Udp counters of /proc/net/snmp as a dict (InErrors, RcvbufErrors...)."""
    text = Path("/proc/net/snmp").read_text()
    record("proc-net-snmp.txt", text)
    return ex.udp_snmp(text)


def cpu_seconds(pid):
    """CPU time of a process, all its threads, in seconds.

    The sum of each thread's /proc/<pid>/task/<tid>/schedstat run time
    (nanoseconds), since utime+stime of /proc/<pid>/stat count in clock
    ticks (10 ms here), too coarse for a few thousand datagrams; that is
    the fallback. Threads that exited are not counted: the receiver and
    the MPM's threads live as long as the child."""
    texts = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                texts.append(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text())
            except OSError:
                continue
    except OSError:
        pass
    record("schedstat.txt", "".join(texts))
    seconds = ex.schedstat_seconds(texts)
    if seconds is not None:
        return seconds
    return ex.stat_seconds(Path(f"/proc/{pid}/stat").read_text(), CLK_TCK)


def memory(pid):
    """{Rss, Pss} in KiB from /proc/<pid>/smaps_rollup."""
    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    record("smaps_rollup.txt", text)
    return ex.smaps_memory(text)


def machine():
    """A dict describing this machine, for the report header."""
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    uname = os.uname()
    return {"cpus": os.cpu_count(), "online": len(os.sched_getaffinity(0)),
            "model": model, "mem_gib": int(mem.group(1)) / 2**20 if mem else None,
            "kernel": f"{uname.sysname} {uname.release}",
            "rmem_max": _read_int("/proc/sys/net/core/rmem_max")}


def loadavg():
    return Path("/proc/loadavg").read_text().split()[:3]


def _read_int(path):
    try:
        return int(Path(path).read_text())
    except (OSError, ValueError):
        return None


def tool_version(cmd, pattern):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        m = re.search(pattern, r.stdout + r.stderr)
        return m.group(1) if m else "?"
    except (OSError, subprocess.SubprocessError):
        return None




def closed_to(port, within):
    """Connections to port this side closed in the last within seconds
    (extract.closed_to, from ss's time-wait sockets and their timers)."""
    out = subprocess.run(["ss", "-tnoH", "state", "time-wait"], capture_output=True,
                         text=True, timeout=10).stdout
    record("ss-time-wait.txt", out)
    return ex.closed_to(out, port, within)
