# Licensed under the Apache License, Version 2.0; see LICENSE.
"""make install, then make uninstall, into this machine (root only).

The Makefile's own targets, as a user runs them, with the build tree
`make check` used (BEACON_BUILD, default build/). make install runs
twice: the second time apxs renames the first's proxy_beacon.load to
proxy_beacon.load.bak~, which make uninstall must remove too. Then:
`apache2ctl -M` lists proxy_beacon_module, `apache2ctl -t` passes, the
Tomcat Listener's jar is in /usr/local/share/java with the listener's
class, and linked from Debian's tomcat10's lib/ when that exists; after
make uninstall none of the files is left, the jar and its link included,
nor a2enmod's state file, `apache2ctl -M` no longer lists the module and
`apache2ctl -t` passes as it did before; a second make uninstall finds nothing and succeeds. The
modules a2enmod enabled for ours are disabled again by the fixture
(machine_test), which checks the machine is as it was.
"""

import os
import zipfile
from pathlib import Path

import machine
from machine import MODS_AVAILABLE, MODS_ENABLED, REPO, TOMCAT_JAR, TOMCAT_LIB

BUILD = os.environ.get("BEACON_BUILD", "build")
LISTENER_CLASS = "modproxybeacon/tomcat/BeaconListener.class"


def loaded_modules():
    ok, out = machine.apache2ctl("-M")
    assert ok, out
    return out


def test_install_then_uninstall(machine_test):
    state = machine_test
    assert "proxy_beacon_module" not in loaded_modules()
    so = machine.apxs_libexecdir() / "mod_proxy_beacon.so"
    try:
        for _ in range(2):
            machine.make("install", f"BUILD={BUILD}")
        for path in (so, Path("/usr/local/bin/beaconctl"),
                     MODS_AVAILABLE / "proxy_beacon.load.bak~"):
            assert path.is_file(), path
        for name in ("proxy_beacon.load", "proxy_beacon.conf"):
            assert (MODS_AVAILABLE / name).read_text() == \
                (REPO / "contrib" / "debian" / name).read_text()
            assert (MODS_ENABLED / name).resolve() == MODS_AVAILABLE / name
        assert "proxy_beacon_module (shared)" in loaded_modules()
        ok, out = machine.apache2ctl("-t")
        assert ok, out
        r = machine.run(["/usr/local/bin/beaconctl", "--help"], timeout=60)
        assert r.stdout.startswith("usage: beaconctl")
        jar = Path("/usr/local/share/java") / TOMCAT_JAR
        with zipfile.ZipFile(jar) as z:
            assert LISTENER_CLASS in z.namelist(), z.namelist()
        link = TOMCAT_LIB / TOMCAT_JAR
        if TOMCAT_LIB.is_dir():
            assert link.is_symlink() and link.resolve() == jar, link
        else:
            assert not link.exists() and not link.is_symlink()

        r = machine.make("uninstall")
        print(r.stdout)
        assert machine.installed() == []
        assert "proxy_beacon_module" not in loaded_modules()
        ok, out = machine.apache2ctl("-t")
        assert ok == state.configtest_ok, out
        assert "still enabled, as a2enmod enabled them for proxy_beacon" in r.stdout

        again = machine.make("uninstall")
        assert "uninstall: nothing to remove" in again.stdout, again.stdout
    finally:
        # A failed check above must not leave the module installed.
        if machine.installed():
            print(machine.make("uninstall", check=False).stdout)
