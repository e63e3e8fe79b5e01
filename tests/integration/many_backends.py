# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Hundreds of HTTP backends in one process: one port on many loopback
addresses (127.0.B.1 to 127.0.B.250, then 127.0.B+1.1, ...), each answering
every request with 200 and its own address as the body, so a response names
the member the balancer picked. A test that needs 400 members needs neither
400 processes nor 400 ports. Run as a script, this file is the server:

    python3 many_backends.py PORT FIRST_BLOCK COUNT

It prints "ready" once every address listens.
"""

import asyncio
import subprocess
import sys
from pathlib import Path

from httpd import ChildProcess, free_port, wait_for

PER_BLOCK = 250


def address(block, i):
    """The i-th address (from 0) of the run that starts at 127.0.block.1."""
    return f"127.0.{block + i // PER_BLOCK}.{1 + i % PER_BLOCK}"


class ManyBackends(ChildProcess):
    """count backends on 127.0.block.1 and up, all on one port; started and
    stopped by pid. urls[i] is the i-th backend's origin, names[i] its
    address (the body it answers with)."""

    def __init__(self, workdir, count, block, port=None):
        self.port = port or free_port()
        self.names = [address(block, i) for i in range(count)]
        self.urls = [f"http://{a}:{self.port}" for a in self.names]
        self.block = block
        self.log_path = Path(workdir) / f"many-backends-{block}.log"

    def start(self, timeout=15):
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, str(self.port), str(self.block),
                 str(len(self.names))], stdout=log, stderr=subprocess.STDOUT)

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"many_backends exited {self.proc.returncode}: "
                                     + self.log_path.read_text())
            return "ready" in self.log_path.read_text()
        wait_for(ready, timeout, f"{len(self.names)} backends on port {self.port}",
                 interval=0.05)
        return self


async def _answer(reader, writer):
    """HTTP/1.1 with keep-alive (mod_proxy reuses its connections): read a
    request head (no request body: GET and HEAD only), answer, repeat."""
    body = writer.get_extra_info("sockname")[0].encode()
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            status = b"200 OK" if head[:4] in (b"GET ", b"HEAD") else b"405 Not Allowed"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body)
                         + (b"" if head.startswith(b"HEAD") else body))
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve(port, block, count):
    hosts = [address(block, i) for i in range(count)]
    server = await asyncio.start_server(_answer, host=hosts, port=port, backlog=512,
                                        reuse_address=True)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
