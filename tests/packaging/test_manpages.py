# Licensed under the Apache License, Version 2.0; see LICENSE.
"""debian/mkman's two manual pages, as debian/rules makes them.

mod_proxy_beacon(5) has a subsection for every <directivesynopsis> of
docs/mod_proxy_beacon.xml, beaconctl(1) one for every command that
`beaconctl --help` lists, and neither makes groff warn (lintian runs the
same check on the built package, later and slower). A page is generated,
so a directive or option added to the XML or the program is in the
next package without an edit here.
"""

import os
import re
import xml.etree.ElementTree as ET

import pytest

import machine
from machine import REPO

MKMAN = REPO / "debian" / "mkman"
XML = REPO / "docs" / "mod_proxy_beacon.xml"
BEACONCTL = REPO / os.environ.get("BEACON_BUILD", "build") / "beaconctl"


def mkman(*args):
    return machine.run(["/usr/bin/python3", str(MKMAN), *args, "--version", "0.1.0"],
                       timeout=60, env={**os.environ, "SOURCE_DATE_EPOCH": "0"}).stdout


def groff_warnings(page, tmp_path):
    """groff's warnings (all of them, -ww) for the page; [] when clean."""
    if not machine.have("groff"):
        pytest.skip("groff is not installed")
    src = tmp_path / "page"
    src.write_text(page)
    r = machine.run(["groff", "-man", "-ww", "-z", "-Tutf8", str(src)], timeout=60,
                    check=False)
    return r.stdout.splitlines() + ([f"exit {r.returncode}"] if r.returncode else [])


def test_directives_page(tmp_path):
    page = mkman("directives", str(XML))
    names = [d.findtext("name").strip()
             for d in ET.parse(XML).getroot().iter("directivesynopsis")]
    assert names, "no <directivesynopsis> in the XML"
    assert re.findall(r"^\.SS (\S+)$", page, re.M)[-len(names):] == names
    assert page.startswith('.TH "MOD_PROXY_BEACON" "5" "1970-01-01"')
    assert "\n.SH NAME\nmod_proxy_beacon \\- " in page
    assert groff_warnings(page, tmp_path) == []


def test_beaconctl_page(tmp_path):
    if not BEACONCTL.exists():
        pytest.skip(f"{BEACONCTL} is not built")
    page = mkman("beaconctl", str(BEACONCTL))
    helptext = machine.run([str(BEACONCTL), "--help"], timeout=60).stdout
    commands = re.findall(r"^usage: beaconctl ([a-z][a-z-]*)", helptext, re.M)
    assert commands, "beaconctl --help names no command"
    assert re.findall(r"^\.SS (\S+)$", page, re.M) == commands
    # Every option of every command is there, as a minus sign (\-).
    for option in sorted(set(re.findall(r"^  (--[a-z-]+)", helptext, re.M))):
        assert option.replace("-", "\\-") in page, option
    assert "\n.SH EXIT STATUS\n" in page
    assert groff_warnings(page, tmp_path) == []
