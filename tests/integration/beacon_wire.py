# Licensed under the Apache License, Version 2.0; see LICENSE.
"""A beacon sender in pure Python, written from docs/wire-format.md.

It shares no code with the C library on purpose: a datagram that the module
accepts from this sender proves the two implementations agree on the wire
format, not merely that one implementation agrees with itself. The test
vectors of tests/vectors/ (read_vectors() below), which
test_wire_vectors.py runs, prove this sender first.

sign() does no validation, so tests can build malformed frames (duplicate
keys, bad ts, oversize) that are still correctly signed.
"""

import hashlib
import ipaddress
import os
import re
import socket
import struct
import time
from pathlib import Path

MASK64 = 0xFFFFFFFFFFFFFFFF


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK64


def _sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & MASK64
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & MASK64
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & MASK64
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & MASK64
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(key: bytes, msg: bytes) -> int:
    """SipHash-2-4 of msg under a 16-byte key, as a 64-bit integer."""
    if len(key) != 16:
        raise ValueError("SipHash key must be 16 bytes")
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]
    full = len(msg) - len(msg) % 8
    tail = int.from_bytes(msg[full:], "little") | ((len(msg) & 0xFF) << 56)
    blocks = [struct.unpack_from("<Q", msg, i)[0] for i in range(0, full, 8)]
    for m in blocks + [tail]:
        v[3] ^= m
        for _ in range(2):
            v = list(_sipround(*v))
        v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        v = list(_sipround(*v))
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def tag_hex(key: bytes, msg: bytes) -> str:
    """The tag as the wire writes it: the 8 little-endian bytes, lower-case hex."""
    return siphash24(key, msg).to_bytes(8, "little").hex()


def parse_key(secret) -> bytes:
    """ProxyBeaconSecret (str, or the bytes a file held) -> 16-byte key:
    `hex:`+32 hex digits, or a passphrase of at least 16 bytes whose SHA-1
    gives the key (its first 16 bytes)."""
    raw = secret if isinstance(secret, bytes) else secret.encode()
    if raw.startswith(b"hex:"):
        digits = raw[4:]
        if len(digits) != 32 or any(c not in b"0123456789abcdefABCDEF" for c in digits):
            raise ValueError("hex: key needs exactly 32 hex digits")
        return bytes.fromhex(digits.decode("ascii"))
    if len(raw) < 16:
        raise ValueError("passphrase must be at least 16 bytes")
    return hashlib.sha1(raw).digest()[:16]


def parse_secret_file(content: bytes) -> bytes:
    """The key of a secret file's content, by the secret-file rule: the
    first line (to the first LF or the end), one CR before its end dropped,
    at most 4096 bytes, no NUL and no other CR; then as parse_key()."""
    line = content.split(b"\n", 1)[0]
    if line.endswith(b"\r"):
        line = line[:-1]
    if len(line) > 4096 or b"\0" in line or b"\r" in line:
        raise ValueError("the secret file's first line breaks the rule")
    return parse_key(line)


MEMBER_LABEL = b"beacon-member-v1"


def parse_master(secret) -> bytes:
    """A master (version 1.3, member keys) -> its 16 bytes: `hex:` and 32
    hex digits only; a passphrase is refused."""
    raw = secret if isinstance(secret, bytes) else secret.encode()
    if not raw.startswith(b"hex:"):
        raise ValueError("a master must be hex: and 32 hex digits")
    return parse_key(raw)


def member_key(master, svc, url) -> bytes:
    """A member's 16-byte key, from docs/wire-format.md, "Version 1.3":
    L = "beacon-member-v1" 0x00 svc 0x00 url, and the key is the two
    SipHash-2-4 tags of 0x01 || L and 0x02 || L under the master, each as
    its 8 little-endian bytes. master is a `hex:` string or 16 bytes; svc
    and url are str or bytes (svc empty for a member without svc=), url
    the canonical url, taken as given."""
    k = master if isinstance(master, bytes) and len(master) == 16 else parse_master(master)
    svc = svc.encode() if isinstance(svc, str) else bytes(svc)
    url = url.encode() if isinstance(url, str) else bytes(url)
    label = MEMBER_LABEL + b"\x00" + svc + b"\x00" + url
    first = siphash24(k, b"\x01" + label)
    second = siphash24(k, b"\x02" + label)
    return struct.pack("<QQ", first, second)


def _as_key(key) -> bytes:
    return key if isinstance(key, bytes) else parse_key(key)


def sign(fields, key) -> bytes:
    """`BEACON k=v ... mac=<tag>` for fields, a list of (key, value) in wire order.

    key is 16 bytes or a ProxyBeaconSecret string. Values are str()-ed and
    written as given: no check, so tests can sign deliberately bad frames.
    """
    body = " ".join(["BEACON"] + [f"{k}={v}" for k, v in fields]).encode()
    return body + b" mac=" + tag_hex(_as_key(key), body).encode()


def now_usec() -> int:
    """Wall clock in microseconds since the epoch, the unit of `ts`."""
    return time.time_ns() // 1000


def announce(key, url=None, host="pytest", pid=None, seq=1, ts=None,
             state=None, extra=()) -> bytes:
    """A signed datagram in the C sender's order: url, host, pid, seq, ts,
    state, then extra (key, value) pairs. A None field is omitted; pid
    defaults to this process, ts to now."""
    pid = os.getpid() if pid is None else pid
    ts = now_usec() if ts is None else ts
    fields = [("url", url), ("host", host), ("pid", pid), ("seq", seq),
              ("ts", ts), ("state", state)]
    fields = [(k, v) for k, v in fields if v is not None] + list(extra)
    return sign(fields, key)


def fields(datagram: bytes) -> dict:
    """The fields of a datagram a sender wrote (mac included), by key; for
    reading back what a sender under test sends, not for verifying it."""
    return dict(f.split("=", 1) for f in datagram.decode().split()[1:])


def send(datagram: bytes, addr) -> None:
    """Send one datagram to addr = (host, port); loopback only, by rule."""
    host, port = addr[0], addr[1]
    ip = ipaddress.ip_address(host)
    if not ip.is_loopback:
        raise ValueError(f"tests send only to loopback, not {host}")
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.sendto(datagram, (host, port))


# ---------------------------------------------------------------------------
# The data files of tests/vectors/ (format: tests/vectors/README.md)

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"

_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|(.))", re.S)
_SIMPLE = {"\\": b"\\", "t": b"\t", "n": b"\n", "r": b"\r", "0": b"\0"}


def _unescape(field: str, where: str) -> bytes:
    out, pos = bytearray(), 0
    for m in list(_ESCAPE.finditer(field)) + [None]:
        literal = field[pos:m.start() if m else len(field)]
        if "\\" in literal:  # only a backslash at the very end is unmatched
            raise ValueError(f"{where}: a backslash ends the field")
        out += literal.encode("ascii")
        if m is None:
            break
        if m.group(1):
            out.append(int(m.group(1), 16))
        elif m.group(2) in _SIMPLE:
            out += _SIMPLE[m.group(2)]
        else:
            raise ValueError(f"{where}: bad escape {m.group(0)!r}")
        pos = m.end()
    return bytes(out)


def read_vectors(name: str, columns, directory: Path = VECTORS) -> list:
    """The rows of directory/name as dicts {column: bytes}, plus "line",
    after checking the header is exactly columns. Raises ValueError on
    anything the format does not allow, as the C reader does."""
    path = Path(directory) / name
    rows, header = [], None
    for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
        where = f"{path}:{number}"
        if any((c < 0x20 and c != 9) or c > 0x7E for c in line):
            raise ValueError(f"{where}: a raw control or non-ASCII byte")
        text = line.decode("ascii")
        if not text or text.startswith("#"):
            continue
        fields = text.split("\t")
        if header is None:
            if fields != list(columns):
                raise ValueError(f"{where}: header {fields}, expected {list(columns)}")
            header = fields
            continue
        if len(fields) != len(header):
            raise ValueError(f"{where}: {len(fields)} fields, the header has {len(header)}")
        row = {col: _unescape(f, where) for col, f in zip(header, fields)}
        row["line"] = number
        rows.append(row)
    if header is None:
        raise ValueError(f"{path}: no header line")
    return rows
