# Licensed under the Apache License, Version 2.0; see LICENSE.
"""beaconctl drain, run for real against beaconctl listen on loopback:
draining announcements until --for is up, --until-command exits 0 or a
stop signal, then leaving.

Run by ctest (one entry per class), or directly:
    BEACONCTL=build/beaconctl /usr/bin/python3 tests/cli/test_drain.py -v
"""

import os
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_beaconctl import (  # noqa: E402  (after the path is set)
    BEACONCTL, HEX_SECRET, TIMEOUT, CliTestCase, Listener, Process, run)

URL = "http://127.0.0.1:8095"
DRAINING = (r"^accepted url=http://127\.0\.0\.1:8095 host=web-9 pid=\d+ "
            r"seq=\d+ ts=\d+ svc=shop ctx=/shop,/cart route=web9 "
            r"state=draining from 127\.0\.0\.1:\d+ -> (add|renew)$")
LEAVING = (r"^accepted url=http://127\.0\.0\.1:8095 host=web-9 .* route=web9 "
           r"state=leaving from 127\.0\.0\.1:\d+ -> disable$")


class DrainTest(CliTestCase):
    def drain(self, *extra):
        """A listener, and drain announcing URL to it every 0.2 s."""
        listener = Listener()
        self.addCleanup(listener.stop)
        drainer = Process(["drain", "--interval", "0.2",
                           "--to", f"127.0.0.1:{listener.port}", "--url", URL,
                           "--host", "web-9", "--service", "shop",
                           "--ctx", "/shop,/cart", "--route", "web9"]
                          + list(extra))
        self.addCleanup(drainer.stop)
        return listener, drainer

    def assert_drained_then_left(self, listener, at_least=2):
        """Draining announcements (the first adds), then one leaving."""
        first = listener.expect(r"^(accepted|dropped) ")
        self.assertRegex(first, DRAINING)
        self.assertTrue(first.endswith("-> add"), first)
        for _ in range(at_least - 1):
            self.assertRegex(listener.expect(r"^(accepted|dropped) "), DRAINING)
        listener.expect(r"state=leaving")
        self.assertRegex(listener.seen[-1], LEAVING)
        for line in listener.seen[1:-1]:  # after "listening on"
            self.assertRegex(line, DRAINING)

    def ended(self, drainer):
        """drain's exit status, which must be 0, and its stderr lines (read
        once: the pipe gives them only once)."""
        rc = drainer.wait(TIMEOUT)
        err = drainer.stderr().splitlines()
        self.assertEqual(rc, 0, err)
        self.assertTrue(err, "drain says how it ended")
        return err

    def test_drains_for_the_time_given_then_says_leaving(self):
        start = time.monotonic()
        listener, drainer = self.drain("--for", "0.7")
        err = self.ended(drainer)
        self.assertGreaterEqual(time.monotonic() - start, 0.7)
        self.assert_drained_then_left(listener, at_least=3)
        self.assertRegex(err[-1],
                         r"^beaconctl: drain: drained for \S+ s: --for is up; "
                         r"said leaving$")

    def test_until_command_exiting_0_ends_the_drain_early(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        done = os.path.join(d.name, "sessions-gone")
        # --for 60: only the command can end it within the test's bound
        listener, drainer = self.drain("--for", "60",
                                       "--until-command", f"test -e '{done}'")
        for _ in range(3):
            self.assertRegex(listener.expect(r"^(accepted|dropped) "), DRAINING)
        self.assertIsNone(drainer.proc.poll(), "still draining")
        open(done, "w").close()
        err = self.ended(drainer)
        listener.expect(r"state=leaving")
        self.assertRegex(listener.seen[-1], LEAVING)
        self.assertRegex(err[-1], r"^beaconctl: drain: drained for \S+ s: "
                                  r"--until-command exited 0; said leaving$")
        # the failing runs before were warned about once
        self.assertEqual(sum("--until-command exited 1" in e for e in err), 1,
                         err)

    def test_a_stop_signal_ends_the_drain_with_leaving(self):
        listener, drainer = self.drain("--for", "60")
        for _ in range(2):
            self.assertRegex(listener.expect(r"^(accepted|dropped) "), DRAINING)
        drainer.proc.send_signal(signal.SIGTERM)
        err = self.ended(drainer)
        listener.expect(r"state=leaving")
        self.assertRegex(listener.seen[-1], LEAVING)
        self.assertRegex(err[-1],
                         r": stopped by a signal; said leaving$")

    def test_a_command_still_running_at_the_end_is_stopped(self):
        start = time.monotonic()
        listener, drainer = self.drain("--for", "0.5",
                                       "--until-command", "exec sleep 60")
        err = self.ended(drainer)
        self.assertLess(time.monotonic() - start, TIMEOUT)
        listener.expect(r"state=leaving")
        self.assertRegex(err[-1], r": --for is up; ")

    def test_usage_errors(self):
        cases = [
            (["--to", "127.0.0.1:9"], "--for DURATION is required"),
            (["--for", "soon", "--to", "127.0.0.1:9"], "--for 'soon'"),
            (["--for", "0", "--to", "127.0.0.1:9"], "--for '0'"),
            (["--for", "5"], "--to HOST:PORT is required"),
            (["--for", "5", "--to", "127.0.0.1:9", "--once"], "--once"),
            (["--for", "5", "--to", "127.0.0.1:9", "--state", "standby"],
             "--state"),
            (["--for", "5", "--to", "127.0.0.1:9", "--ctx", "/a/"], "--ctx"),
        ]
        for args, problem in cases:
            with self.subTest(args=args):
                self.assert_one_line_error(run(["drain"] + args,
                                               secret=HEX_SECRET),
                                           must_contain=[problem])


if __name__ == "__main__":
    if not os.access(BEACONCTL, os.X_OK):
        sys.exit(f"test_drain.py: no executable at {BEACONCTL}; set BEACONCTL")
    unittest.main()
