# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Fixtures for the packaging tests (`make check` runs them last).

  test_uninstall_layouts.py  make uninstall against fake trees (Debian's
                             layout and httpd's own): no root, seconds
  test_manpages.py           debian/mkman's pages: every directive and
                             command, no groff warning
  test_make_deps.py          which make targets install packages
                             (make -n): no root, seconds
  test_make_install.py       make install, twice, then make uninstall,
                             twice, into this machine (root)
  test_deb_package.py        make deb (lintian included), the packages'
                             contents, then apt-get install, a2enmod,
                             apache2 -t with a receiver, apt-get purge
                             (root for all but the build)

The tests that change the machine run as root only (skipped otherwise),
one at a time per machine (machine.MachineLock), refuse to start where
mod_proxy_beacon is installed already (they would remove it), and put
back what they changed (machine.State), whether they pass or fail.
"""

import pytest

import machine


@pytest.fixture
def machine_test():
    """For a test that installs into this machine: root, the lock, no
    mod_proxy_beacon installed yet; the machine's state put back after.
    Yields the State taken before the test."""
    if not machine.is_root():
        pytest.skip("installs into this machine: root only")
    with machine.MachineLock():
        # a2enmod's state files alone are no installation: State puts
        # them back after the test.
        present = machine.installed(state_files=False)
        packages = [p for p in machine.PACKAGES if machine.package_status(p)]
        if present or packages:
            # Not removed here: it may be someone's installation. The
            # test would install over it and then remove it.
            pytest.fail("mod_proxy_beacon is installed on this machine already "
                        f"(files: {', '.join(map(str, present)) or 'none'}; "
                        f"packages: {', '.join(packages) or 'none'}); this test "
                        "installs and removes it, so it needs a machine without: "
                        "run `make uninstall` or `apt-get purge "
                        f"{' '.join(machine.PACKAGES)}` first")
        state = machine.State()
        try:
            yield state
        finally:
            state.restore()
        left = state.differences()
        assert not left, "the machine was not put back as it was:\n" + "\n".join(left)
