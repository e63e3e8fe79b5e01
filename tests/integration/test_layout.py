# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The layout of src/: one prefix per file (issue 33). No httpd needed.

A function src/mod_proxy_beacon_X.c exports (not static) is named
beacon_X_*, so that a name says where its body is: from _config.c
beacon_config_*, from _status_html.c beacon_status_html_*. The top,
mod_proxy_beacon.c, may export any beacon_* name.

The exported functions are read from the objects apxs built
(src/.libs/*.o, `nm -g --defined-only`), which is exact; where an object
is missing or older than its source, from the prototypes of the file's
header instead. The check is also run on a made-up export, to show it can
fail.
"""

import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")
BASE = "mod_proxy_beacon"

# Names that do not carry their file's prefix, at most: what remains after
# the renames of issue 33 (the target is 14).
MAX_OFF_PREFIX = 0

PROTOTYPE = re.compile(r"^(?!typedef|#|\s)[^;{}()]*?\b(beacon_\w+)\s*\(", re.M)


def part_of(stem):
    """'mod_proxy_beacon_status_html' -> 'status_html'; the top -> ''."""
    return stem[len(BASE) + 1:] if stem != BASE else ""


def exports_from_object(obj):
    out = subprocess.run(["nm", "-g", "--defined-only", obj],
                         check=True, capture_output=True, text=True).stdout
    return [f[2] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] == "T"]


def exports_from_header(header):
    with open(header, encoding="utf-8") as fh:
        return PROTOTYPE.findall(fh.read())


def exports():
    """{stem: [exported function names]} for every src/*.c."""
    found = {}
    for name in sorted(os.listdir(SRC)):
        if not name.endswith(".c"):
            continue
        stem = name[:-2]
        source = os.path.join(SRC, name)
        obj = os.path.join(SRC, ".libs", stem + ".o")
        header = os.path.join(SRC, stem + ".h")
        if (shutil.which("nm") and os.path.exists(obj)
                and os.path.getmtime(obj) >= os.path.getmtime(source)):
            found[stem] = exports_from_object(obj)
        elif os.path.exists(header):
            found[stem] = exports_from_header(header)
        else:
            found[stem] = []
    return found


def off_prefix(found):
    """Every 'file: name' whose name lacks its file's prefix."""
    problems = []
    for stem, names in sorted(found.items()):
        part = part_of(stem)
        prefix = "beacon_" + part + "_" if part else "beacon_"
        problems += ["%s.c: %s" % (stem, n) for n in names
                     if not n.startswith(prefix)]
    return problems


def test_exports_are_found():
    found = exports()
    assert len(found) > 20
    assert sum(len(v) for v in found.values()) > 100
    assert "beacon_config_merge_server" in found[BASE + "_config"]


def test_each_file_exports_under_its_own_prefix():
    problems = off_prefix(exports())
    assert len(problems) <= MAX_OFF_PREFIX, \
        "%d exported names lack their file's prefix:\n  %s" % (
            len(problems), "\n  ".join(problems))


def test_the_check_catches_a_name_without_its_prefix():
    found = exports()
    found[BASE + "_shm"] = found[BASE + "_shm"] + ["beacon_status_read"]
    found[BASE + "_status_html"] = ["beacon_status_page"]
    found[BASE] = ["beacon_anything"]
    assert sorted(set(off_prefix(found)) - set(off_prefix(exports()))) == [
        BASE + "_shm.c: beacon_status_read",
        BASE + "_status_html.c: beacon_status_page",
    ]
