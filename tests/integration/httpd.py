# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Private Apache httpd instances for the integration tests.

Each Httpd runs the system's /usr/sbin/apache2 from a config generated in
its own directory, on 127.0.0.1 and a free port, so tests never touch the
machine's httpd and can run side by side. What it relies on (no envvars,
DefaultRuntimeDir per instance, LoadModule order, User/Group as root) was
checked against Debian's apache2 2.4 and is said where it is used.

Rules kept here: every wait is a bounded poll (wait_for), never a fixed
sleep; only processes this instance started are signalled, by pid.
"""

import http.client
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

APACHE2 = os.environ.get("APACHE2", "/usr/sbin/apache2")


def binary_of(command):
    """The executable a child of `command` runs, which gdb needs to read its
    core: command itself when it is an ELF file, else the apache2 that a
    wrapper script such as tools/asan-apache2 execs (BEACON_APACHE2, or
    Debian's). Given the script, gdb reads no symbol and no stack matches."""
    try:
        with open(command, "rb") as f:
            if f.read(4) == b"\x7fELF":
                return command
    except OSError:
        pass
    return os.environ.get("BEACON_APACHE2", "/usr/sbin/apache2")
MODULES_DIR = Path("/usr/lib/apache2/modules")
REPO = Path(__file__).resolve().parents[2]
MANAGER_NS = {"h": "http://httpd.apache.org"}

# Status words of ap_proxy_parse_wstatus -> balancer-manager form letters.
STATUS_LETTERS = {"Ign": "I", "Drn": "N", "Dis": "D", "Stby": "H",
                  "Spar": "R", "Stop": "S", "HcFl": "C"}
# The radios the worker form always posts (C only exists with mod_proxy_hcheck).
FORM_LETTERS = "INDHRS"

ERROR_LEVELS = ("error", "crit", "alert", "emerg")
# Logged at notice, yet failures: "AH00052: child pid N exit signal
# Segmentation fault (11)" (AH00051 when it adds "possible coredump in") is
# how a crashing module shows in the log.
FAILURE_TAGS = ("AH00051", "AH00052")
# httpd's own race, no module's: a stop or restart that is not graceful
# closes every connection at once, and an event MPM worker that was just
# starting a connection's lingering close then logs
# "(9)Bad file descriptor: AH03092: process_lingering_close: apr_pollset_add
# failure". Any request shortly before a stop can leave one.
HTTPD_STOP_RACE_RE = re.compile(r"\(9\)Bad file descriptor: AH03092: ")
# The same race, worse: at that stop the child's main thread closes the
# connections its workers hold (event.c, close_worker_sockets) while a
# worker finishing one frees it, and the child dies in apr_os_sock_get,
# called by mod_mpm_event itself, with no module's frame on its stack. Only
# a core tells it from a module's crash (Httpd.crashes).
HTTPD_CLOSE_RACE_RE = re.compile(
    r"^#0 +0x[0-9a-f]+ in apr_os_sock_get \(\)[^\n]*\n"
    r"#1 +0x[0-9a-f]+ in \?\? \(\) from \S*/mod_mpm_event\.so$", re.M)


# The same, as gdb shows it when httpd's fatal-signal handler ran in the
# faulting thread and gdb's current thread is another: the faulting one is
# the thread with a signal handler frame, apr_os_sock_get right above it.
SIGNALLED_CLOSE_RACE_RE = re.compile(
    r"<signal handler called>\n"
    r"#\d+ +0x[0-9a-f]+ in apr_os_sock_get \(\)[^\n]*\n"
    r"#\d+ +0x[0-9a-f]+ in \?\? \(\) from \S*/mod_mpm_event\.so$", re.M)


def is_httpd_close_race(stack, every=""):
    """Whether the crashing thread's stack (gdb's bt) is HTTPD_CLOSE_RACE_RE's,
    or, in every thread's (thread apply all bt), the one thread that took a
    signal is SIGNALLED_CLOSE_RACE_RE's; no module frame of ours in it."""
    if HTTPD_CLOSE_RACE_RE.search(stack) and "mod_proxy_beacon" not in stack:
        return True
    signalled = [t for t in re.split(r"\n(?=Thread \d+ )", every)
                 if "<signal handler called>" in t]
    return (len(signalled) == 1 and bool(SIGNALLED_CLOSE_RACE_RE.search(signalled[0]))
            and "mod_proxy_beacon" not in signalled[0])
# What the sanitizers write, wherever it lands: with log_path set
# (tools/asan-apache2) ASan writes its report files, but a UBSan "runtime
# error:" of the parent or a LeakSanitizer line can still reach its stderr,
# which is httpd's error log once the log is open, or the output of
# apache2 -t and -k start before.
SANITIZER_RE = re.compile(
    r"runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer")
LOG_LEVEL_RE = re.compile(r"^\[[^\]]*\] \[[^\]:]*:(?P<level>[a-z0-9]+)\]")
LOG_TAG_RE = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2,8}\d{5}):")

_given_ports = set()


# ---- generic helpers ---------------------------------------------------------

def wait_for(cond, timeout, what, interval=0.02):
    """Poll cond() until it returns something truthy, and return that.

    Raises AssertionError naming `what` after `timeout` seconds. Exceptions
    from cond propagate at once (a dead process should fail fast).
    """
    deadline = time.monotonic() + timeout
    while True:
        result = cond()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def get_from(port, path="/", headers=None):
    """(status, body) of a GET to 127.0.0.1:port on a connection of its own:
    for a listener that is not an Httpd's own port (a virtual host's)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()

def free_port():
    """A port free for both TCP and UDP on 127.0.0.1, never handed out twice
    in one run (so a beacon UDP port and an HTTP port cannot collide)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            if port in _given_ports:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
        _given_ports.add(port)
        return port
    raise AssertionError("no free TCP+UDP port on 127.0.0.1")


def module_path():
    """Path of the built mod_proxy_beacon.so, or None if it is not built.

    $BEACON_MODULE wins when set (even if missing, so a typo fails loudly
    instead of skipping). Otherwise the first existing build output; the
    sanitizer tree build-asan/ is never used, as stock httpd lacks ASan.
    """
    env = os.environ.get("BEACON_MODULE")
    if env:
        return str(Path(env).resolve())
    candidates = [REPO / ".libs", REPO / "src" / ".libs", REPO / "build",
                  REPO / "build" / ".libs", REPO / "build" / "src" / ".libs"]
    for d in candidates:
        so = d / "mod_proxy_beacon.so"
        if so.is_file():
            return str(so)
    found = sorted((REPO / "build").glob("**/mod_proxy_beacon.so"))
    return str(found[0]) if found else None


def _proc_stat(pid):
    """(state, ppid) from /proc/<pid>/stat, or None if there is no such pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()  # comm may contain spaces
    return fields[0], int(fields[1])


def pid_gone(pid):
    """True once pid has exited. Reaps it if it is ours (see set_subreaper);
    a zombie we cannot reap counts as gone."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass
    stat = _proc_stat(pid)
    return stat is None or stat[0] == "Z"


def children_of(pid):
    """Live child pids of pid, found by scanning /proc."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat and stat[1] == pid and stat[0] != "Z":
                kids.append(int(entry.name))
    return sorted(kids)


def set_subreaper():
    """Make this process adopt orphaned descendants (prctl PR_SET_CHILD_SUBREAPER).

    `apache2 -k start` daemonizes, so its main process is an orphan. PID 1
    here does not reap, and every stopped httpd would stay a zombie; as a
    subreaper, pid_gone() can reap it. Returns False where unsupported.
    """
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def logged_at(match):
    """When httpd wrote the error log line a wait_log() match is in, in
    seconds since the epoch: a test that measures a server's timing reads
    the server's clock, not its own polling."""
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    # "[Mon Nov 30 13:43:15.606798 2026] ..."
    stamp = match.string[line_start + 1:match.string.index("]", line_start)]
    clock, year = stamp.rsplit(" ", 1)
    whole, fraction = clock.split(".")
    t = time.strptime(f"{whole} {year}", "%a %b %d %H:%M:%S %Y")
    return time.mktime(t) + float("0." + fraction)


def allow_cores():
    """Lifts the soft limit on core size (to the hard one) for the apache2
    this process starts, so that a crashing child leaves a core for
    Httpd.crash_reports()."""
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def error_lines(text, expected_tags=()):
    """The lines of an error log at error level or worse, or with a
    FAILURE_TAGS tag (a child killed by a signal), whose tag (AH01171,
    BCN00012, ...) is not among expected_tags."""
    bad = []
    for line in text.splitlines():
        m = LOG_LEVEL_RE.match(line)
        tag = LOG_TAG_RE.search(line)
        tag = tag.group(1) if tag else None
        if not m or (m.group("level") not in ERROR_LEVELS and tag not in FAILURE_TAGS):
            continue
        if HTTPD_STOP_RACE_RE.search(line):
            continue
        if tag not in expected_tags:
            bad.append(line)
    return bad


def sanitizer_lines(text):
    """The lines of text a sanitizer wrote (SANITIZER_RE)."""
    return [line for line in text.splitlines() if SANITIZER_RE.search(line)]


def report_sanitizer_lines(httpds, report_dir, test_name):
    """Copies the sanitizer lines in the logs of httpds (Httpd.output_files)
    into one file in report_dir, named after test_name, for
    `make check-asan-module`, which fails on any file there; returns the
    files written ([] or one)."""
    found = []
    for h in httpds:
        for path in h.output_files():
            lines = sanitizer_lines(path.read_text(encoding="latin-1"))
            found += [f"{path}: {line}" for line in lines]
    if not found:
        return []
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name)
    report = Path(report_dir) / f"errorlog.{name}.{os.getpid()}"
    with open(report, "a") as f:
        f.write(f"{test_name}\n" + "\n".join(found) + "\n")
    return [report]


# ---- the server ----------------------------------------------------------------

class ChildProcess:
    """A process a test (or the bench) started itself, as self.proc: it is
    stopped by its own Popen, so nothing else is ever signalled."""

    proc = None

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10):
        """terminate(), then kill() if it does not exit within timeout."""
        if not self.running():
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)


class Httpd:
    """One private apache2: config, lifecycle, logs, HTTP and balancer-manager.

    Config parts are plain attributes; change them before start() or
    check_config(), which write conf/httpd.conf. Setting a part to "" drops it.
    """

    AUTO = object()  # module=AUTO: module_path(), may be None
    # An argv prefix the start command runs under (`apache2 -k start`, and
    # fail_to_start's), e.g. private_hosts.HostsFile.launcher(): the whole
    # server then runs in what the prefix sets up. Nothing else uses it.
    launcher = []

    def __init__(self, workdir=None, port=None, mpm="event", module=AUTO,
                 loglevel=None, growth=4, members=(), status=False,
                 extra_config="", tail_config=""):
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="beacon-httpd-"))
        self.port = port or free_port()
        self.mpm = mpm
        self.module = module_path() if module is Httpd.AUTO else module
        self.loglevel = loglevel or ("warn proxy_beacon:trace2" if self.module else "warn")
        self.status = status
        self.extra_config = extra_config
        self.proxy_config = self.balancer_block("cluster", growth, members)
        self.manager_config = MANAGER_LOCATION
        self.proxypass_config = ("ProxyPass /balancer-manager !\n"
                                 + ("ProxyPass /server-status !\n" if status else "")
                                 + "ProxyPass / balancer://cluster/\n")
        self.tail_config = tail_config
        self.pid = None
        self.expected_tags = set()
        self._log_cursor = 0
        self._prepare_dirs()

    # -- files

    @property
    def conf_path(self):
        return self.dir / "conf" / "httpd.conf"

    @property
    def error_log_path(self):
        return self.dir / "logs" / "error.log"

    @property
    def core_dir(self):
        """Where a crashing child leaves its core (crash_reports())."""
        return self.dir / "cores"

    @property
    def access_log_path(self):
        return self.dir / "logs" / "access.log"

    @property
    def pid_path(self):
        return self.dir / "logs" / "httpd.pid"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def _prepare_dirs(self):
        """The parent (root) opens logs and the pidfile before dropping
        privileges; the children run as www-data and must still be able to
        traverse the tree (mkdtemp makes it 0700) and write the runtime dir."""
        for sub in ("conf", "logs", "run", "htdocs"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)
        if os.geteuid() == 0:
            shutil.chown(self.dir / "run", user="www-data", group="www-data")

    # -- config

    @staticmethod
    def balancer_block(name, growth=4, members=()):
        """A <Proxy balancer://name> section with growth and static members."""
        lines = [f"<Proxy balancer://{name}>", f"    ProxySet growth={growth}"]
        lines += [f"    BalancerMember {m}" for m in members]
        return "\n".join(lines + ["</Proxy>"]) + "\n"

    def _load(self, name):
        return f"LoadModule {name}_module {MODULES_DIR}/mod_{name}.so"

    def modules_config(self):
        """LoadModule lines; the beacon module must come after mod_proxy."""
        names = [f"mpm_{self.mpm}", "authz_core", "authz_host", "slotmem_shm",
                 "proxy", "proxy_http", "proxy_balancer", "lbmethod_byrequests"]
        if self.status:
            names.append("status")
        lines = [self._load(n) for n in names]
        if self.module:
            lines.append(f"LoadModule proxy_beacon_module {self.module}")
        return "\n".join(lines) + "\n"

    def base_config(self):
        """Where things go, and KeepAlive Off: after a graceful restart the
        event MPM sometimes logged AH03093 (pollset_add EBADF) for a client
        keep-alive connection in a child being retired, failing the clean-log
        check for a reason that is httpd's. Tests gain nothing from client
        keep-alive; a later `KeepAlive On` in extra_config overrides this."""
        d = self.dir
        user = "User www-data\nGroup www-data\n" if os.geteuid() == 0 else ""
        return (f"ServerRoot {d}\nPidFile {self.pid_path}\nErrorLog {self.error_log_path}\n"
                f"DefaultRuntimeDir {d}/run\nDocumentRoot {d}/htdocs\n"
                f"CoreDumpDirectory {self.core_dir}\n"
                f"ServerName 127.0.0.1\nListen 127.0.0.1:{self.port}\nKeepAlive Off\n{user}")

    def log_config(self):
        """After the LoadModules: `LogLevel proxy_beacon:...` needs the module."""
        return (f"LogLevel {self.loglevel}\n"
                'LogFormat "%P %>s %{BALANCER_WORKER_NAME}e %U" beacon\n'
                f"CustomLog {self.access_log_path} beacon\n")

    def config_text(self):
        status = STATUS_LOCATION if self.status else ""
        parts = [self.base_config(), self.modules_config(), self.log_config(),
                 self.extra_config, self.proxy_config, self.manager_config, status,
                 self.proxypass_config, self.tail_config]
        return "\n".join(p.rstrip("\n") + "\n" for p in parts if p)

    def write_config(self):
        # the children run as www-data: their core goes where they may write
        self.core_dir.mkdir(exist_ok=True)
        os.chmod(self.core_dir, 0o1777)
        self.conf_path.write_text(self.config_text())
        return self.conf_path

    def crashes(self):
        """For each core a child left (kernel.core_pattern "core", the size
        limit lifted by allow_cores): (path, the crashing thread's stack,
        every thread's) by gdb, or stacks that say why there are none: a
        crash that happens once in hundreds of runs is diagnosed from the
        run that saw it."""
        found = []
        for core in sorted(self.core_dir.glob("core*")):
            try:
                r = subprocess.run(["gdb", "-batch", "-nx", "-ex", "bt", "-ex", "echo ====\\n",
                                    "-ex", "thread apply all bt", binary_of(APACHE2),
                                    str(core)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=60)
                crashing, _, every = r.stdout.partition("====\n")
            except (OSError, subprocess.TimeoutExpired) as e:
                crashing = every = f"(no backtrace: {e})"
            found.append((core, crashing, every))
        return found

    def crash_reports(self):
        """The crashes that are no httpd stop race, as text for a failure."""
        return [f"{core}: crashing thread:\n{crashing[-4000:]}\nall threads:\n{every[-20000:]}"
                for core, crashing, every in self.crashes()
                if not is_httpd_close_race(crashing, every)]

    def check_config(self, timeout=30, pass_fds=()):
        """(returncode, output) of `apache2 -t`: config errors, no server.
        pass_fds: fds of ours apache2 inherits (subprocess closes others)."""
        self.write_config()
        r = subprocess.run([APACHE2, "-t", "-f", str(self.conf_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout, pass_fds=pass_fds)
        with open(self.dir / "logs" / "check.out", "a") as f:
            f.write(r.stdout)  # for output_files()
        return r.returncode, r.stdout

    # -- lifecycle

    def _run_start(self):
        """`apache2 -k start`; output goes to a file, not a pipe, so nothing
        the daemon might inherit can keep us waiting."""
        self.write_config()
        out = self.dir / "logs" / "start.out"
        with open(out, "w") as f:
            rc = subprocess.run([*self.launcher, APACHE2, "-f", str(self.conf_path),
                                 "-k", "start"],
                                stdout=f, stderr=subprocess.STDOUT, timeout=30).returncode
        return rc, out.read_text()

    def _read_pid(self):
        try:
            return int(self.pid_path.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _answers_http(self):
        """Readiness probe. `OPTIONS *` is answered by core and never reaches
        mod_proxy, so probing an empty balancer logs no AH01171 error."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(b"OPTIONS * HTTP/1.0\r\n\r\n")
                return s.recv(16).startswith(b"HTTP/")
        except OSError:
            return False

    def start(self, timeout=10):
        """Start; return once the pidfile names a live process and the port
        answers HTTP. A module's readiness is the test's own wait_log()."""
        rc, out = self._run_start()
        if rc != 0:
            raise AssertionError(f"apache2 -k start exited {rc}:\n{out}\n{self._log_tail()}")

        def up():
            pid = self._read_pid()
            if pid and pid_gone(pid):
                raise AssertionError(f"apache2 (pid {pid}) died on start:\n{self._log_tail()}")
            return pid and self._answers_http() and pid

        try:
            self.pid = wait_for(up, timeout, f"apache2 on port {self.port} to start")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{out}\n{self._log_tail()}") from None
        return self

    def fail_to_start(self, timeout=10):
        """Run a config that must be refused; return (returncode, output + log).

        Runs `apache2 -DFOREGROUND`, our own child: it must exit by itself
        within timeout. Unlike `-k start`, errors after the first config pass
        (when -k start has already detached and returned 0) still show here.
        """
        self.write_config()
        out = self.dir / "logs" / "fail.out"
        with open(out, "w") as f:
            proc = subprocess.Popen([*self.launcher, APACHE2, "-f", str(self.conf_path),
                                     "-DFOREGROUND"],
                                    stdout=f, stderr=subprocess.STDOUT)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(timeout)
            raise AssertionError(f"apache2 still up after {timeout}s, expected it to fail")
        return rc, out.read_text() + self.error_log()

    def running(self):
        return self.pid is not None and not pid_gone(self.pid)

    def child_pids(self):
        """Live children of the main process (the MPM's worker processes)."""
        return children_of(self.pid) if self.pid else []

    def stop(self, timeout=10):
        """TERM the main pid and wait until it and its children are gone.

        Leftovers get SIGKILL, and then an AssertionError: a server that
        cannot stop on TERM is a bug worth a red test."""
        if not self.running():
            self.pid = None
            return
        pids = [self.pid] + self.child_pids()
        os.kill(self.pid, signal.SIGTERM)
        try:
            wait_for(lambda: all(pid_gone(p) for p in pids), timeout,
                     f"apache2 pids {pids} to exit after SIGTERM")
        except AssertionError:
            for p in pids:
                if not pid_gone(p):
                    os.kill(p, signal.SIGKILL)
            wait_for(lambda: all(pid_gone(p) for p in pids), timeout, "SIGKILLed apache2")
            raise
        finally:
            self.pid = None

    def graceful(self, timeout=10):
        """SIGUSR1, then wait for the next "resuming normal operations"
        (AH00489, a notice that httpd logs at any LogLevel)."""
        mark = self.log_size()
        os.kill(self.pid, signal.SIGUSR1)
        self.wait_log(r"AH00489:", timeout, since=mark)

    # -- logs

    def error_log(self):
        try:
            return self.error_log_path.read_text(encoding="latin-1")
        except FileNotFoundError:
            return ""

    def output_files(self):
        """Every file httpd wrote its messages to: the error logs (a test
        may add its own in logs/), and the output of apache2 -t
        (check.out), -k start (start.out) and -DFOREGROUND (fail.out)."""
        logs = self.dir / "logs"
        if not logs.is_dir():
            return []
        skip = {self.access_log_path, self.pid_path}
        return sorted(p for p in logs.iterdir() if p.is_file() and p not in skip)

    def _log_tail(self, n=30):
        return "error log tail:\n" + "\n".join(self.error_log().splitlines()[-n:])

    def log_size(self):
        return len(self.error_log())

    def mark_log(self):
        """Move the wait_log cursor to the end: only new lines count from now."""
        self._log_cursor = self.log_size()
        return self._log_cursor

    def wait_log(self, regex, timeout=10, since=None):
        """Wait for a line matching regex after the cursor (or `since`).

        Returns the re.Match; the cursor moves past the matched line, so the
        same call again waits for the NEXT occurrence."""
        pattern = re.compile(regex, re.M)
        start = self._log_cursor if since is None else since
        m = wait_for(lambda: pattern.search(self.error_log(), start), timeout,
                     f"error log line matching {regex!r} in {self.error_log_path}")
        eol = m.string.find("\n", m.end())
        self._log_cursor = len(m.string) if eol < 0 else eol + 1
        return m

    def expect_errors(self, *tags):
        """Declare error-level log lines with these tags expected by the test."""
        self.expected_tags.update(tags)

    def unexpected_errors(self):
        """error_lines(), less one child crash that its core shows to be
        httpd's own stop race (HTTPD_CLOSE_RACE_RE)."""
        bad = error_lines(self.error_log(), self.expected_tags)
        crash_lines = [line for line in bad if any(t in line for t in FAILURE_TAGS)]
        crashes = self.crashes() if crash_lines else []
        if (len(crash_lines) == 1 and len(crashes) == 1 and
                is_httpd_close_race(crashes[0][1], crashes[0][2])):
            bad.remove(crash_lines[0])
        return bad

    def access_log(self):
        """Access log entries as dicts {pid, status, worker, path}; worker is
        "-" for requests the balancer did not route.

        httpd writes the line after the response went out, so a client can
        see its answer before the line exists: wait_for() it, never read once.
        """
        try:
            lines = self.access_log_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        keys = ("pid", "status", "worker", "path")
        rows = [dict(zip(keys, line.split(" ", 3))) for line in lines]
        for r in rows:
            r["pid"], r["status"] = int(r["pid"]), int(r["status"])
        return rows

    # -- HTTP

    def request(self, method, path, body=None, headers=None, timeout=10):
        """One request on a fresh connection: (status, headers, body text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read().decode("latin-1")
        finally:
            conn.close()

    def get(self, path, headers=None, timeout=10):
        """GET path: (status, body text)."""
        status, _, body = self.request("GET", path, headers=headers, timeout=timeout)
        return status, body

    # -- balancer-manager

    def _manager_headers(self):
        """The handler ignores every parameter unless the Referer's host is
        the server name (CSRF guard, mod_proxy_balancer.c safe_referer)."""
        return {"Referer": f"{self.url}/balancer-manager"}

    def manager_xml(self):
        """The balancer-manager's XML view, parsed."""
        status, body = self.get("/balancer-manager?xml=1", self._manager_headers())
        assert status == 200, f"balancer-manager answered {status}: {body[:300]}"
        return ET.fromstring(body)

    @staticmethod
    def _balancer_el(root, name):
        full = name if name.startswith("balancer://") else f"balancer://{name}"
        for b in root.iterfind("h:balancers/h:balancer", MANAGER_NS):
            if b.findtext("h:name", namespaces=MANAGER_NS) == full:
                return b
        names = [n.text for n in root.iterfind("h:balancers/h:balancer/h:name", MANAGER_NS)]
        raise AssertionError(f"no {full} in balancer-manager; has {names}")

    @staticmethod
    def _worker_dict(el):
        """Each child element by local name; digits become ints, status is
        stripped ("Init Ok") and also split into a set, `flags`."""
        w = {}
        for child in el:
            text = (child.text or "").strip()
            w[child.tag.split("}")[-1]] = int(text) if re.fullmatch(r"-?\d+", text) else text
        w["flags"] = set(w.get("status", "").split())
        return w

    def balancer_members(self, name="cluster", root=None):
        """The workers of balancer://name as dicts: name, status, flags,
        elected, busy, lbset, route, ... (see httpd-integration.md)."""
        b = self._balancer_el(root if root is not None else self.manager_xml(), name)
        return [self._worker_dict(w) for w in b.iterfind("h:workers/h:worker", MANAGER_NS)]

    def balancer_nonce(self, name="cluster", root=None):
        b = self._balancer_el(root if root is not None else self.manager_xml(), name)
        return b.findtext("h:nonce", namespaces=MANAGER_NS)

    def worker(self, worker_url, balancer="cluster"):
        """One worker's dict by exact name; AssertionError if absent."""
        members = self.balancer_members(balancer)
        for w in members:
            if w["name"] == worker_url:
                return w
        raise AssertionError(f"no worker {worker_url}; have {[w['name'] for w in members]}")

    def set_worker_status(self, balancer, worker_url, **flags):
        """Change worker flags like an operator in balancer-manager, e.g.
        D=1 (disabled), S=1 (stopped), N=1 (drain). Returns the worker after.

        The form re-posts every radio, so letters not given are re-posted
        with their current value; C (hcheck) only when given."""
        bad = set(flags) - set(FORM_LETTERS + "C")
        assert not bad, f"unknown status letters {bad}"
        root = self.manager_xml()
        short = balancer.removeprefix("balancer://")
        current = {w["name"]: w for w in self.balancer_members(short, root)}
        assert worker_url in current, f"no worker {worker_url}; have {list(current)}"
        have = {STATUS_LETTERS[f] for f in current[worker_url]["flags"] if f in STATUS_LETTERS}
        form = {"b": short, "w": worker_url, "nonce": self.balancer_nonce(short, root),
                "xml": "1"}
        for letter in FORM_LETTERS + ("C" if "C" in flags else ""):
            form[f"w_status_{letter}"] = int(flags.get(letter, letter in have))
        headers = dict(self._manager_headers(),
                       **{"Content-Type": "application/x-www-form-urlencoded"})
        status, _, body = self.request("POST", "/balancer-manager",
                                       urllib.parse.urlencode(form), headers)
        assert status == 200, f"balancer-manager POST answered {status}: {body[:300]}"
        after = self.balancer_members(short, ET.fromstring(body))
        return next(w for w in after if w["name"] == worker_url)


MANAGER_LOCATION = """\
<Location /balancer-manager>
    SetHandler balancer-manager
    Require ip 127.0.0.1 ::1
</Location>
"""

STATUS_LOCATION = """\
ExtendedStatus On
<Location /server-status>
    SetHandler server-status
    Require ip 127.0.0.1 ::1
</Location>
"""
