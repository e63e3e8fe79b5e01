# Licensed under the Apache License, Version 2.0; see LICENSE.
"""make uninstall against fake installations in a temporary directory.

No root and nothing outside the directory: `apxs` is a stub that answers
`apxs -q` with the directory's paths, and the real a2dismod works on a
fake /etc/apache2 and /var/lib/apache2 (a2enmod(8): APACHE_CONFDIR,
APACHE_STATE_DIRECTORY). What is checked is what make install left:

  Both:   the Tomcat Listener's jar under DESTDIR+PREFIX/share/java and
          its link in DESTDIR+CATALINA_HOME/lib (another jar there stays,
          and a file of the link's name that is no link is left alone).
  Debian: the DSO, beaconctl under DESTDIR+PREFIX, proxy_beacon.load,
          .conf and apxs's .load.bak~ in mods-available, the links in
          mods-enabled, a2enmod's state file; a module whose .load
          depends on proxy_beacon (a2dismod refuses to disable ours
          before it); the modules a2enmod enabled for ours stay enabled.
  httpd's own layout (no mods-available): the LoadModule line apxs -a
          added to httpd.conf, deleted with nothing else of the file.

And a second make uninstall finds nothing and succeeds.
"""

import os
import stat

import pytest

import machine
from machine import REPO

DEPS = ("proxy", "proxy_balancer", "lbmethod_byrequests", "slotmem_shm")


def fake_apxs(root, sysconfdir, target="apache2"):
    """An apxs that answers -q LIBEXECDIR, SYSCONFDIR and TARGET."""
    apxs = root / "apxs"
    apxs.write_text(
        "#!/bin/sh\n"
        '[ "$1" = -q ] || { echo "fake apxs: only -q" >&2; exit 2; }\n'
        'case $2 in\n'
        f"    LIBEXECDIR) echo {root}/modules ;;\n"
        f"    SYSCONFDIR) echo {sysconfdir} ;;\n"
        f"    TARGET) echo {target} ;;\n"
        '    *) exit 2 ;;\n'
        "esac\n")
    apxs.chmod(0o755)
    return apxs


def installed_files(root):
    """Every file and symlink under root, relative, but the fake apxs."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if (p.is_file() or p.is_symlink()) and p.name != "apxs")


def uninstall(root, apxs, apache_etc, **env):
    return machine.make("uninstall", f"APXS={apxs}", f"APACHE_ETC={apache_etc}",
                        "PREFIX=/usr/local", f"DESTDIR={root}/dest", timeout=60,
                        APACHE_STATE_DIRECTORY=str(root / "state"), **env)


JAR = "dest/usr/local/share/java/beacon-tomcat.jar"
JAR_LINK = "dest/usr/share/tomcat10/lib/beacon-tomcat.jar"
OTHER_JAR = "dest/usr/share/tomcat10/lib/catalina.jar"


def common_files(root):
    """The DSO, beaconctl, the jar and its link (CATALINA_HOME's default,
    /usr/share/tomcat10, under DESTDIR), as make install puts them."""
    (root / "modules").mkdir()
    (root / "modules" / "mod_proxy_beacon.so").write_bytes(b"\x7fELF")
    (root / "modules" / "mod_other.so").write_bytes(b"\x7fELF")
    bindir = root / "dest" / "usr" / "local" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "beaconctl").write_bytes(b"#!")
    (bindir / "other-tool").write_bytes(b"#!")
    (root / JAR).parent.mkdir(parents=True)
    (root / JAR).write_bytes(b"PK")
    (root / OTHER_JAR).parent.mkdir(parents=True)
    (root / OTHER_JAR).write_bytes(b"PK")
    (root / JAR_LINK).symlink_to("/usr/local/share/java/beacon-tomcat.jar")


@pytest.fixture
def debian_tree(tmp_path):
    """A make-installed proxy_beacon in a fake Debian layout."""
    if not machine.have("a2dismod"):
        pytest.skip("a2dismod (Debian's apache2) is not installed")
    etc = tmp_path / "etc" / "apache2"
    avail, enabled = etc / "mods-available", etc / "mods-enabled"
    avail.mkdir(parents=True)
    enabled.mkdir()
    common_files(tmp_path)
    for m in DEPS:
        (avail / f"{m}.load").write_text(f"LoadModule {m}_module x/mod_{m}.so\n")
    for name in ("proxy_beacon.load", "proxy_beacon.conf"):
        (avail / name).write_text((REPO / "contrib" / "debian" / name).read_text())
    (avail / "proxy_beacon.load.bak~").write_text("LoadModule proxy_beacon_module x\n")
    # A third-party module that needs ours: it must be disabled first.
    (avail / "beacon_addon.load").write_text(
        "# Depends: proxy proxy_beacon\nLoadModule beacon_addon_module x/mod_ba.so\n")
    for name in [f"{m}.load" for m in DEPS] + ["proxy_beacon.load", "proxy_beacon.conf",
                                               "beacon_addon.load"]:
        (enabled / name).symlink_to(f"../mods-available/{name}")
    marker = tmp_path / "state" / "module" / "enabled_by_admin"
    marker.mkdir(parents=True)
    (marker / "proxy_beacon").touch()
    (marker / "proxy").touch()
    return tmp_path, fake_apxs(tmp_path, etc), etc


def test_debian_layout(debian_tree):
    root, apxs, etc = debian_tree
    r = uninstall(root, apxs, etc)
    print(r.stdout)
    left = installed_files(root)
    gone = ["modules/mod_proxy_beacon.so", "dest/usr/local/bin/beaconctl", JAR, JAR_LINK,
            "etc/apache2/mods-available/proxy_beacon.load",
            "etc/apache2/mods-available/proxy_beacon.conf",
            "etc/apache2/mods-available/proxy_beacon.load.bak~",
            "etc/apache2/mods-enabled/proxy_beacon.load",
            "etc/apache2/mods-enabled/proxy_beacon.conf",
            "etc/apache2/mods-enabled/beacon_addon.load",
            "state/module/enabled_by_admin/proxy_beacon"]
    assert not set(gone) & set(left), r.stdout
    # Everything else is untouched: other modules, files and state.
    kept = ["modules/mod_other.so", "dest/usr/local/bin/other-tool", OTHER_JAR,
            "etc/apache2/mods-available/beacon_addon.load",
            "state/module/enabled_by_admin/proxy"]
    kept += [f"etc/apache2/mods-{d}/{m}.load" for m in DEPS for d in ("available", "enabled")]
    assert set(kept) <= set(left), r.stdout
    assert "disabled beacon_addon, which depends on proxy_beacon" in r.stdout
    assert "disabled proxy_beacon" in r.stdout
    assert "still enabled, as a2enmod enabled them for proxy_beacon: " + " ".join(DEPS) \
        in r.stdout

    again = uninstall(root, apxs, etc)
    assert "uninstall: nothing to remove" in again.stdout, again.stdout
    assert installed_files(root) == left


def test_debian_layout_disabled_module(debian_tree):
    """Disabled by hand before uninstall: the files and a2dismod's state
    file still go."""
    root, apxs, etc = debian_tree
    for name in ("proxy_beacon.load", "proxy_beacon.conf", "beacon_addon.load"):
        (etc / "mods-enabled" / name).unlink()
    marker = root / "state" / "module" / "enabled_by_admin" / "proxy_beacon"
    disabled = root / "state" / "module" / "disabled_by_admin"
    disabled.mkdir()
    marker.rename(disabled / "proxy_beacon")
    r = uninstall(root, apxs, etc)
    assert "removed a2enmod's state for proxy_beacon" in r.stdout, r.stdout
    assert not (disabled / "proxy_beacon").exists()
    assert not (etc / "mods-available" / "proxy_beacon.load").exists()
    assert "nothing to remove" in uninstall(root, apxs, etc).stdout


HTTPD_CONF = """\
ServerRoot "/opt/httpd"
LoadModule proxy_module modules/mod_proxy.so
LoadModule proxy_balancer_module modules/mod_proxy_balancer.so
LoadModule proxy_beacon_module  modules/mod_proxy_beacon.so
#LoadModule proxy_beacon_module modules/mod_proxy_beacon.so
LoadModule status_module modules/mod_status.so
# proxy_beacon_module is named in this comment, which stays.
"""


def test_httpd_layout(tmp_path):
    """Where there is no mods-available, apxs -a added a LoadModule line
    to $SYSCONFDIR/$TARGET.conf; that line (and a commented copy) goes."""
    common_files(tmp_path)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    conf = conf_dir / "httpd.conf"
    conf.write_text(HTTPD_CONF)
    conf.chmod(0o640)
    apxs = fake_apxs(tmp_path, conf_dir, target="httpd")
    no_debian = tmp_path / "no-such-etc"

    r = uninstall(tmp_path, apxs, no_debian)
    assert conf.read_text() == "".join(
        ln + "\n" for ln in HTTPD_CONF.splitlines() if "LoadModule proxy_beacon" not in ln)
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o640
    assert f"removed from {conf}: LoadModule proxy_beacon_module" in r.stdout
    left = installed_files(tmp_path)
    assert not {"modules/mod_proxy_beacon.so", "dest/usr/local/bin/beaconctl", JAR,
                JAR_LINK} & set(left), r.stdout
    assert {"modules/mod_other.so", "dest/usr/local/bin/other-tool", OTHER_JAR} <= set(left)

    again = uninstall(tmp_path, apxs, no_debian)
    assert "uninstall: nothing to remove" in again.stdout, again.stdout


def test_a_jar_copied_by_hand_is_left_alone(tmp_path):
    """A file where make install puts its link was copied there by hand
    (or by another tool): uninstall says so and keeps it; the jar in
    share/java still goes."""
    common_files(tmp_path)
    link = tmp_path / JAR_LINK
    link.unlink()
    link.write_bytes(b"PK")
    apxs = fake_apxs(tmp_path, tmp_path / "conf")
    r = uninstall(tmp_path, apxs, tmp_path / "no-such-etc")
    assert f"left {link} alone: a file, not the link make install makes" in r.stdout, r.stdout
    assert link.read_bytes() == b"PK"
    assert not (tmp_path / JAR).exists()


def test_no_apxs(tmp_path):
    """Without apxs the DSO cannot be found: a clear error and a failed
    make, never a silent success."""
    r = machine.make("uninstall", f"APXS={tmp_path}/no-apxs",
                     f"APACHE_ETC={tmp_path}/no-etc", f"DESTDIR={tmp_path}",
                     timeout=60, check=False)
    assert r.returncode != 0
    assert "no-apxs not found" in r.stdout, r.stdout
