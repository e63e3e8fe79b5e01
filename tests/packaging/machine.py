# Licensed under the Apache License, Version 2.0; see LICENSE.
"""What the packaging tests need to change this machine and put it back.

The tests of tests/packaging install mod_proxy_beacon into the machine
itself (make install, apt-get install ./*.deb), as root, and must leave it
as they found it. Three things here:

  MachineLock   one test at a time per machine: two checkouts running
                `make check` at once would install and purge the same
                files under each other
  State         what `make install`, a2enmod and the packages change
                outside their own files (the enabled modules, a2enmod's
                state files), taken before a test and put back after
  installed()   which of the files make install or the packages write
                exist now, to check before (nothing) and after (nothing)

Rules kept, as in tests/integration: every wait is a bounded poll, and
every command has a time limit.
"""

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APACHE_ETC = Path("/etc/apache2")
MODS_AVAILABLE = APACHE_ETC / "mods-available"
MODS_ENABLED = APACHE_ETC / "mods-enabled"
STATE_DIR = Path("/var/lib/apache2/module")
POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
PACKAGES = ("libapache2-mod-proxy-beacon", "beacon-tools", "beacon-tomcat")
# The Tomcat Listener's jar: make install's, the package's, and the link
# to either in Debian's tomcat10 (CATALINA_HOME's lib/).
TOMCAT_JAR = "beacon-tomcat.jar"
TOMCAT_LIB = Path("/usr/share/tomcat10/lib")
LOCK_PATH = Path("/run/lock/mod_proxy_beacon-packaging.lock")


def run(cmd, timeout=300, check=True, env=None, **kwargs):
    """Runs cmd; stdout and stderr together in .stdout. A failure shows
    the whole output, which is what one needs to see."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout, env=env, **kwargs)
    if check and r.returncode != 0:
        # The end of the output, where a build or a maintainer script says
        # what went wrong; the whole of a compiler's would drown it.
        tail = "\n".join(r.stdout.splitlines()[-60:])
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {r.returncode}; "
                             f"its output ends:\n{tail}")
    return r


def make_env(**extra):
    """The environment for a `make` the tests start: none of the make
    that runs pytest's MAKEFLAGS (its jobserver's descriptors are not
    inherited), so each make is a plain one."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    env.update(extra)
    return env


def make(*args, timeout=600, check=True, **extra_env):
    return run(["make", "--no-print-directory", "-C", str(REPO), *args],
               timeout=timeout, check=check, env=make_env(**extra_env))


def is_root():
    return os.geteuid() == 0


def package_status(name):
    """dpkg's status word for a package: 'installed', 'config-files', or
    '' when dpkg does not know it."""
    r = run(["dpkg-query", "-W", "-f=${db:Status-Status}", name], check=False, timeout=60)
    return r.stdout.strip() if r.returncode == 0 else ""


def owner(path):
    """The package that owns path, or None."""
    r = run(["dpkg-query", "-S", str(path)], check=False, timeout=60)
    if r.returncode != 0:
        return None
    return r.stdout.split(":", 1)[0].strip()


def apxs_libexecdir():
    return Path(run(["apxs", "-q", "LIBEXECDIR"], timeout=60).stdout.strip())


def installed(state_files=True):
    """The files of make install and of the packages that exist now
    (symlinks counted even when dangling); with state_files, a2enmod's
    state files that name proxy_beacon too."""
    paths = [apxs_libexecdir() / "mod_proxy_beacon.so",
             Path("/usr/local/bin/beaconctl"), Path("/usr/bin/beaconctl"),
             Path("/lib/systemd/system/beaconctl-send.service"), TOMCAT_LIB / TOMCAT_JAR]
    # The jar, and the package's versioned one (beacon-tomcat-VERSION.jar).
    for java in (Path("/usr/local/share/java"), Path("/usr/share/java")):
        paths += sorted(java.glob("beacon-tomcat*.jar"))
    for name in ("proxy_beacon.load", "proxy_beacon.conf", "proxy_beacon.load.bak~"):
        paths += [MODS_AVAILABLE / name, MODS_ENABLED / name]
    if state_files:
        paths += sorted(STATE_DIR.glob("*/proxy_beacon"))
    return [p for p in paths if p.exists() or p.is_symlink()]


def apache2ctl(*args):
    """(ok, output) of apache2ctl on the system's configuration."""
    r = run(["apache2ctl", *args], check=False, timeout=60)
    return r.returncode == 0, r.stdout


class MachineLock:
    """An exclusive flock, waited for in a bounded poll."""

    def __init__(self, timeout=900):
        self.timeout = timeout
        self.fd = None

    def __enter__(self):
        LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise AssertionError(f"{LOCK_PATH} still held after {self.timeout} s")
                time.sleep(1)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


class NoServiceStarts:
    """A policy-rc.d that denies service starts (exit 101), for as long
    as the with-block lasts: the packages' maintainer scripts restart
    apache2 after a2enmod, and a test must not start the machine's
    apache2. One that exists already is the machine's: left alone, as
    scripts/ensure-deps does."""

    def __enter__(self):
        self.ours = not POLICY_RC_D.exists()
        if self.ours:
            POLICY_RC_D.write_text("#!/bin/sh\n# temporary, from mod_proxy_beacon "
                                   "tests/packaging\nexit 101\n")
            POLICY_RC_D.chmod(0o755)
        return self

    def __exit__(self, *exc):
        if self.ours:
            POLICY_RC_D.unlink(missing_ok=True)


class State:
    """The enabled modules and a2enmod's state files, before a test.

    a2enmod proxy_beacon (make install's, the package's postinst, the
    test's own) also enables the modules proxy_beacon.load depends on,
    and neither make uninstall nor apt-get purge disables those;
    a2dismod leaves state files and directories. restore() disables what
    was not enabled before and puts the state files back as they were."""

    def __init__(self):
        self.enabled = self._enabled()
        self.markers = self._markers()
        self.dirs = self._dirs()
        self.configtest_ok, _ = apache2ctl("-t")

    @staticmethod
    def _enabled():
        return {p.name[:-5] for p in MODS_ENABLED.glob("*.load")}

    @staticmethod
    def _markers():
        return {p for p in STATE_DIR.glob("*/*") if p.is_file()}

    @staticmethod
    def _dirs():
        return {p for p in STATE_DIR.glob("*") if p.is_dir()}

    def restore(self):
        extra = sorted(self._enabled() - self.enabled)
        if extra:
            # -f: a module that depends on another goes with it (a2dismod
            # refuses otherwise); all of them are new, since a module
            # enabled before had its dependencies enabled before too.
            run(["a2dismod", "-q", "-f", *extra], timeout=60)
        missing = sorted(self.enabled - self._enabled())
        if missing:
            run(["a2enmod", "-q", *missing], timeout=60)
        for p in self._markers() - self.markers:
            p.unlink()
        for p in self.markers - self._markers():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.touch()
        for d in self._dirs() - self.dirs:
            if not any(d.iterdir()):
                d.rmdir()

    def differences(self):
        """What is not as it was, as readable lines; [] when restored."""
        out = []
        now = self._enabled()
        out += [f"enabled now: {m}" for m in sorted(now - self.enabled)]
        out += [f"disabled now: {m}" for m in sorted(self.enabled - now)]
        markers = self._markers()
        out += [f"new state file: {p}" for p in sorted(markers - self.markers)]
        out += [f"state file gone: {p}" for p in sorted(self.markers - markers)]
        out += [f"new state directory: {d}" for d in sorted(self._dirs() - self.dirs)]
        return out


def have(program):
    return shutil.which(program) is not None
