# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The Debian packages: make deb, their contents, and a round trip through
apt on this machine.

The packages are built once per run with `make deb` into a temporary
directory, DEB_BUILD_OPTIONS=nocheck (`make check` ran the unit tests
just before) and lintian as make deb runs it, so a lintian error fails
the build here. BEACON_DEBS=DIR uses the .debs already in DIR instead.

test_install_enable_purge (root) then does what an operator does:
apt-get install ./*.deb, a2enmod proxy_beacon, and `apache2 -t` on a
receiver configured in a standalone file that loads the module from
where the package put it, with the modules its .load says it depends on;
make install refuses to run over the packages and make uninstall leaves
their files alone; beaconctl --help from /usr/bin, the manual pages found
by man, the Tomcat Listener's jar linked into Debian's tomcat10's lib/;
then
apt-get purge, after which no file of the packages is left, a2enmod's
state neither, and the machine's own `apache2ctl -t` is as it was. The
purge runs whatever happens, and the machine_test fixture disables the
modules a2enmod enabled for ours, as they were before.
"""

import os
import re
import time
import zipfile
from pathlib import Path

import pytest

import machine
from machine import MODS_AVAILABLE, MODS_ENABLED, PACKAGES, REPO, TOMCAT_JAR, TOMCAT_LIB

MODULE_PKG, TOOLS_PKG, TOMCAT_PKG = PACKAGES
JAR = f"/usr/share/java/{TOMCAT_JAR}"
JAR_LINK = str(TOMCAT_LIB / TOMCAT_JAR)
LISTENER_CLASS = "modproxybeacon/tomcat/BeaconListener.class"
SECRET = "hex:000102030405060708090a0b0c0d0e0f"
# What each package must hold (more is fine: docs, changelog, copyright).
EXPECTED = {
    MODULE_PKG: ["/usr/lib/apache2/modules/mod_proxy_beacon.so",
                 "/etc/apache2/mods-available/proxy_beacon.load",
                 "/etc/apache2/mods-available/proxy_beacon.conf",
                 "/usr/share/man/man5/mod_proxy_beacon.5.gz"],
    TOOLS_PKG: ["/usr/bin/beaconctl",
                "/lib/systemd/system/beaconctl-send.service",
                "/usr/share/man/man1/beaconctl.1.gz"],
    # The jar, and the link Debian's tomcat10 loads it by.
    TOMCAT_PKG: [JAR, JAR_LINK],
}
# The packages built for this machine's architecture; the others are "all".
ARCH_ANY = (MODULE_PKG, TOOLS_PKG)
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]
BUILD = os.environ.get("BEACON_BUILD", "build")


def changelog_version():
    return machine.run(["dpkg-parsechangelog", "-l", str(REPO / "debian" / "changelog"),
                        "-S", "Version"], timeout=60).stdout.strip()


@pytest.fixture(scope="module")
def debs(tmp_path_factory):
    """{package: Path of its .deb}."""
    given = os.environ.get("BEACON_DEBS")
    if given:
        out = Path(given)
    else:
        out = tmp_path_factory.mktemp("deb")
        started = time.monotonic()
        r = machine.make("deb", f"DEB_BUILD={out}", DEB_BUILD_OPTIONS="nocheck",
                         timeout=900)
        lint = r.stdout[r.stdout.rfind("lintian "):]
        print(f"\nmake deb: {time.monotonic() - started:.0f} s; {lint}")
    arch = machine.run(["dpkg", "--print-architecture"], timeout=60).stdout.strip()
    version = changelog_version()
    found = {p: out / f"{p}_{version}_{arch if p in ARCH_ANY else 'all'}.deb"
             for p in PACKAGES}
    for path in found.values():
        assert path.is_file(), f"{path} was not built"
    return found


def deb_files(deb):
    """The paths a .deb installs (dpkg-deb -c), as absolute paths."""
    listing = machine.run(["dpkg-deb", "-c", str(deb)], timeout=60).stdout
    return {line.split(None, 5)[5].split(" -> ")[0].lstrip(".")
            for line in listing.splitlines()}


def deb_links(deb):
    """{absolute path: target} of the symbolic links a .deb installs."""
    listing = machine.run(["dpkg-deb", "-c", str(deb)], timeout=60).stdout
    return {name.lstrip("."): target
            for name, _, target in (line.split(None, 5)[5].partition(" -> ")
                                    for line in listing.splitlines()
                                    if line.startswith("l"))}


def deb_extract(deb, tmp_path):
    machine.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], timeout=60)
    return tmp_path


def deb_file_text(deb, path, tmp_path):
    return (deb_extract(deb, tmp_path) / path.lstrip("/")).read_text()


def deb_field(deb, field):
    return machine.run(["dpkg-deb", "-f", str(deb), field], timeout=60).stdout.strip()


def test_version_matches_changes():
    """debian/changelog's version is the one CHANGES is at."""
    first = re.search(r"^Changes with mod_proxy_beacon (\S+)$",
                      (REPO / "CHANGES").read_text(), re.M)
    assert first, "CHANGES names no version"
    assert changelog_version() == first.group(1)


def test_contents(debs, tmp_path):
    for package, paths in EXPECTED.items():
        files = deb_files(debs[package])
        assert set(paths) <= files, f"{package} lacks {set(paths) - files}"
    # The .load is contrib's, which names the modules a receiver needs.
    load = deb_file_text(debs[MODULE_PKG], "/etc/apache2/mods-available/proxy_beacon.load",
                         tmp_path / "module")
    assert load == (REPO / "contrib" / "debian" / "proxy_beacon.load").read_text()
    unit = deb_file_text(debs[TOOLS_PKG], "/lib/systemd/system/beaconctl-send.service",
                         tmp_path / "tools")
    assert "\nExecStart=/usr/bin/beaconctl send " in unit
    assert "/usr/local/" not in unit.split("[Unit]", 1)[1]
    depends = deb_field(debs[MODULE_PKG], "Depends")
    assert "apache2-api-" in depends, depends


def test_tomcat_package(debs, tmp_path):
    """beacon-tomcat: one jar with the listener's class, for any
    architecture, named as the Java policy names a public jar
    (beacon-tomcat-VERSION.jar, and beacon-tomcat.jar a link to it),
    linked into tomcat10's lib/ by a relative link, and depending on the
    Tomcat jars it is compiled against."""
    deb = debs[TOMCAT_PKG]
    assert deb_field(deb, "Architecture") == "all"
    assert "libtomcat10-java" in deb_field(deb, "Depends")
    versioned = f"beacon-tomcat-{changelog_version()}.jar"
    assert deb_links(deb) == {JAR: versioned, JAR_LINK: "../../java/" + TOMCAT_JAR}, \
        deb_links(deb)
    assert "/usr/share/java/" + versioned in deb_files(deb)
    root = deb_extract(deb, tmp_path)
    with zipfile.ZipFile(root / JAR.lstrip("/")) as z:
        names = z.namelist()
    assert LISTENER_CLASS in names, names
    # Its own classes only: Tomcat's are Tomcat's to load.
    assert not [n for n in names if n.endswith(".class")
                and not n.startswith("modproxybeacon/")], names
    assert (root / JAR_LINK.lstrip("/")).resolve() == root / "usr/share/java" / versioned


def receiver_config(workdir, so, deps):
    """A standalone apache2 configuration (no Include) of a receiver: the
    modules the .load depends on, then ours, a balancer with growth."""
    loads = [f"LoadModule mpm_event_module {so.parent}/mod_mpm_event.so",
             f"LoadModule authz_core_module {so.parent}/mod_authz_core.so"]
    for dep in deps:
        loads += [ln for ln in (MODS_AVAILABLE / f"{dep}.load").read_text().splitlines()
                  if ln.startswith("LoadModule")]
    loads.append(f"LoadModule proxy_beacon_module {so}")
    # apache2 -t binds no port: these need not be free.
    return "\n".join([
        f"ServerRoot {workdir}", f"DefaultRuntimeDir {workdir}",
        f"PidFile {workdir}/httpd.pid", f"ErrorLog {workdir}/error.log",
        "ServerName 127.0.0.1", "Listen 127.0.0.1:8080", *loads,
        "<Proxy balancer://cluster>", "    ProxySet growth=10", "</Proxy>",
        "ProxyPass / balancer://cluster/",
        "ProxyBeaconListen 127.0.0.1:5555", "ProxyBeaconBalancer cluster",
        f"ProxyBeaconSecret {SECRET}", ""])


def test_install_enable_purge(debs, machine_test, tmp_path):
    state = machine_test
    try:
        with machine.NoServiceStarts():
            r = machine.run([*APT, "install", *map(str, debs.values())], timeout=600)
        print(r.stdout)
        for package in PACKAGES:
            assert machine.package_status(package) == "installed", r.stdout

        # The module, where the package put it and its .load says.
        load = (MODS_AVAILABLE / "proxy_beacon.load").read_text()
        so = Path(re.search(r"^LoadModule proxy_beacon_module (\S+)$", load, re.M).group(1))
        assert machine.owner(so) == MODULE_PKG
        deps = re.search(r"^# Depends: (.*)$", load, re.M).group(1).split()

        with machine.NoServiceStarts():
            print(machine.run(["a2enmod", "proxy_beacon"], timeout=60).stdout)
        load_link = MODS_ENABLED / "proxy_beacon.load"
        assert load_link.resolve() == MODS_AVAILABLE / "proxy_beacon.load"
        for dep in deps:
            assert (MODS_ENABLED / f"{dep}.load").exists(), f"a2enmod did not enable {dep}"
        ok, out = machine.apache2ctl("-M")
        assert ok and "proxy_beacon_module (shared)" in out, out
        ok, out = machine.apache2ctl("-t")
        assert ok == state.configtest_ok, out

        conf = tmp_path / "receiver.conf"
        conf.write_text(receiver_config(tmp_path, so, deps))
        r = machine.run(["/usr/sbin/apache2", "-t", "-f", str(conf)], timeout=60, check=False)
        assert r.returncode == 0 and "Syntax OK" in r.stdout, conf.read_text() + r.stdout

        # make install and make uninstall leave the packages' files alone.
        r = machine.make("install", f"BUILD={BUILD}", check=False)
        assert r.returncode != 0 and f"the Debian package {MODULE_PKG} is installed" \
            in r.stdout, r.stdout
        r = machine.make("uninstall")
        assert "the files above are the packages'" in r.stdout, r.stdout
        assert machine.owner(so) == MODULE_PKG
        assert load_link.resolve() == MODS_AVAILABLE / "proxy_beacon.load", r.stdout

        r = machine.run(["/usr/bin/beaconctl", "--help"], timeout=60)
        assert r.stdout.startswith("usage: beaconctl")
        assert Path(JAR_LINK).resolve() == Path(JAR).resolve(), Path(JAR_LINK).resolve()
        assert Path(JAR).resolve().is_file()
        assert machine.owner(JAR_LINK) == TOMCAT_PKG and machine.owner(JAR) == TOMCAT_PKG
        if machine.have("man"):
            for section, page in (("5", "mod_proxy_beacon"), ("1", "beaconctl")):
                path = Path(f"/usr/share/man/man{section}/{page}.{section}.gz")
                if path.exists():  # dpkg's path-exclude may drop manual pages
                    r = machine.run(["man", "-w", section, page], timeout=60)
                    assert r.stdout.strip() == str(path)
    finally:
        with machine.NoServiceStarts():
            purge = machine.run([*APT, "purge", *PACKAGES], timeout=600, check=False)
        print(purge.stdout)
    assert purge.returncode == 0, purge.stdout
    for package in PACKAGES:
        assert machine.package_status(package) in ("", "not-installed"), purge.stdout
    left = [p for paths in EXPECTED.values() for p in paths if Path(p).exists()]
    assert left == [] and machine.installed() == [], (left, machine.installed())
    ok, out = machine.apache2ctl("-t")
    assert ok == state.configtest_ok, out
