# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Private name resolution for one process: its own /etc/hosts.

A sender that resolves a name to every proxy of a tier is tested with
names the machine does not know, without touching the machine's
/etc/hosts: the process is started in a mount namespace of its own
(`unshare -m`) where a file of the test's is bind-mounted over /etc/hosts.
glibc's "files" source reads /etc/hosts again at every lookup, and gives
every line's address for the name (127.0.0.2, 127.0.0.3 and ::1 from three
lines, for AF_UNSPEC): the test changes the tier by rewriting its file.

The file is rewritten in place (same inode): a bind mount pins the inode,
so a new file put in its place by rename would never be seen. Each rewrite
is one write of the whole file at a fixed size (the content, then a
comment as padding), never a truncation first: a lookup in between could
otherwise find the file empty, the name missing, and ask DNS.

Needs root (unshare -m, mount); usable() says why not, once per run.
"""

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

# `unshare -m` execs sh, which bind-mounts "$0" (the hosts file) and execs
# the command: the command keeps the pid the caller started.
UNSHARE = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"']
SIZE = 4096  # one page: a lookup reads it whole, in one read()


class HostsFile:
    """A hosts file of the test's, and the launcher that makes it /etc/hosts.

    entries: {name: [address, ...]}, one line per address, in order."""

    def __init__(self, path, entries=None):
        self.path = Path(path)
        self.set(entries or {})
        self.path.chmod(0o644)  # httpd's children (www-data) resolve too

    def set(self, entries):
        """Rewrites the file in place with these entries, and only these."""
        text = "".join(f"{addr} {name}\n" for name, addrs in entries.items()
                       for addr in addrs)
        pad = SIZE - len(text) - 2
        if pad < 0:
            raise ValueError(f"{len(text)} bytes of hosts lines: at most {SIZE - 2}")
        data = (text + "#" + " " * pad + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            assert os.pwrite(fd, data, 0) == SIZE
        finally:
            os.close(fd)
        return self

    def launcher(self):
        """The argv prefix that runs a command with this file as /etc/hosts
        (an Httpd's `launcher`, or a Popen's first arguments)."""
        return UNSHARE + [str(self.path)]

    def resolve(self, name):
        """The addresses a process launched with this file gets for name
        (getent ahosts, AF_UNSPEC), in glibc's order, without duplicates."""
        r = subprocess.run(self.launcher() + ["getent", "ahosts", name],
                           capture_output=True, text=True, timeout=30)
        seen = []
        for line in r.stdout.splitlines():
            addr = line.split()[0]
            if addr not in seen:
                seen.append(addr)
        return seen


@functools.lru_cache(maxsize=None)
def usable():
    """None if a private /etc/hosts works here, else why not (a skip reason).

    Probed once: a launched getent must see a name of a file of ours."""
    if os.geteuid() != 0:
        return "a private /etc/hosts needs root (unshare -m and mount --bind)"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    with tempfile.TemporaryDirectory(prefix="beacon-hosts-") as d:
        hosts = HostsFile(Path(d) / "hosts", {"probe.beacon.test": ["127.0.0.2"]})
        try:
            got = hosts.resolve("probe.beacon.test")
        except (OSError, subprocess.SubprocessError) as e:
            return f"a private /etc/hosts failed here: {e}"
        if got != ["127.0.0.2"]:
            r = subprocess.run(hosts.launcher() + ["true"], capture_output=True,
                               text=True, timeout=30)
            return (f"a private /etc/hosts failed here: `unshare -m` + `mount --bind` "
                    f"gave {got} for the probe name (exit {r.returncode}: "
                    f"{r.stderr.strip()[:200]})")
    return None
