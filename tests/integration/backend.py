# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Real HTTP backends for the proxy: one process each, answering with its name.

A response body that names the backend is how tests see which member the
balancer picked. Run as a script, this file is the server itself:

    python3 backend.py NAME PORT

Every GET/HEAD gets 200 and body NAME (GET /slow/MS after MS milliseconds:
a request held in flight; GET /health 503 while the backend is made sick
with Backend.set_healthy(False)); each request's path is printed to
stdout (Backend.requests() reads it back), e.g. to see `GET //x`.
"""

import subprocess
import sys
from pathlib import Path

from httpd import ChildProcess, free_port, wait_for


class Backend(ChildProcess):
    """One backend process on 127.0.0.1:port; started and stopped by pid."""

    def __init__(self, name, workdir, port=None):
        self.name = name
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(workdir) / f"backend-{name}.log"
        self.sick_path = Path(workdir) / f"backend-{name}.sick"
        self.proc = None

    def start(self, timeout=10):
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, self.name, str(self.port),
                 str(self.sick_path)],
                stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._answers, timeout, f"backend {self.name} on port {self.port}")
        return self

    def _answers(self):
        """True once it serves its name; raises at once if the process died."""
        import http.client
        if self.proc.poll() is not None:
            raise AssertionError(f"backend {self.name} exited {self.proc.returncode}: "
                                 + self.log_path.read_text())
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            conn.request("GET", "/_ready")
            return conn.getresponse().read().decode() == self.name
        except OSError:
            return False
        finally:
            conn.close()

    def set_healthy(self, healthy):
        """GET /health answers 200 (healthy) or 503 from now on."""
        if healthy:
            self.sick_path.unlink(missing_ok=True)
        else:
            self.sick_path.touch()

    def requests(self):
        """Request lines ("GET /path") served so far, readiness probes excluded."""
        lines = self.log_path.read_text().splitlines()
        return [l for l in lines if l.startswith(("GET ", "HEAD ")) and l != "GET /_ready"]


def serve(name, port, sick_path=None):
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    log_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, with_body, status=200):
            body = name.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Backend", name)
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def _log_request(self):
            # one write per line: print() writes the text and the newline
            # separately, and the lines of concurrent requests interleave
            with log_lock:
                sys.stdout.write(f"{self.command} {self.path}\n")
                sys.stdout.flush()

        def do_GET(self):
            # logged on arrival: a /slow/MS request, answered after MS
            # milliseconds, shows while it is still in flight
            self._log_request()
            if self.path.startswith("/slow/"):
                time.sleep(int(self.path.split("/")[2]) / 1000)
            sick = self.path == "/health" and sick_path and Path(sick_path).exists()
            self._answer(True, 503 if sick else 200)

        def do_HEAD(self):
            self._log_request()
            self._answer(False)

        def log_message(self, *args):
            pass  # stdout carries only the request lines

    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
