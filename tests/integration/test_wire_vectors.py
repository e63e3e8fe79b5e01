# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The Python sender against the known answers of docs/wire-format.md.

The integration tests trust beacon_wire to speak the protocol; the rows of
tests/vectors/ are what earns that trust, independently of the C library,
which the unit tests check against the same files. Here the data files are
checked too: every row that claims a correct MAC has one by this second
implementation, so a row cannot be right for C by accident.
"""

import socket
from collections import Counter
from pathlib import Path

import pytest

import beacon_wire as bw

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"


def rows(name, *columns):
    return bw.read_vectors(name, columns, VECTORS)


def split_mac(datagram):
    """(signed part, mac hex) of a datagram with a mac= tail."""
    body, _, mac = datagram.rpartition(b" mac=")
    return body, mac.decode("ascii", "replace")


def fields_of(datagram):
    """The (key, value) pairs between BEACON and mac=, in order."""
    body, _ = split_mac(datagram)
    return [tuple(t.decode().split("=", 1)) for t in body.split(b" ")[1:]]


# ---------------------------------------------------------------------------
# SipHash-2-4

def test_siphash_matches_all_64_paper_vectors():
    sip = rows("siphash24.txt", "key", "message", "tag")
    assert len(sip) == 64
    for i, row in enumerate(sip):
        message = bytes.fromhex(row["message"].decode())
        assert message == bytes(range(i)), f"line {row['line']}: not vector {i}"
        got = bw.tag_hex(bytes.fromhex(row["key"].decode()), message)
        assert got == row["tag"].decode(), f"vector {i} (line {row['line']})"


# ---------------------------------------------------------------------------
# The announcement vectors

ANNOUNCEMENTS = rows("announcements.txt", "version", "secret", "datagram")


def test_announcement_vectors_cover_every_version():
    versions = Counter(r["version"] for r in ANNOUNCEMENTS)
    assert set(versions) == {b"v1", b"v1.1", b"v1.2"}
    assert versions[b"v1"] >= 3 and versions[b"v1.1"] >= 3 and versions[b"v1.2"] >= 4


@pytest.mark.parametrize("row", ANNOUNCEMENTS, ids=lambda r: f"line{r['line']}")
def test_sign_reproduces_each_announcement_vector(row):
    # A str: bw.sign() takes bytes for a key that is already 16 bytes.
    secret = row["secret"].decode()
    assert bw.sign(fields_of(row["datagram"]), secret) == row["datagram"]


@pytest.mark.parametrize("row", ANNOUNCEMENTS, ids=lambda r: f"line{r['line']}")
def test_announce_writes_each_vector_in_wire_order(row):
    """url, host, pid, seq, ts, then the rest (the fields of 1.1 and 1.2)
    in the order given: the order every vector is written in. state goes
    with the rest: the C senders write it last, after svc and ctx."""
    known = ("url", "host", "pid", "seq", "ts")
    fields = dict(fields_of(row["datagram"]))
    extra = [(k, v) for k, v in fields_of(row["datagram"]) if k not in known]
    got = bw.announce(row["secret"].decode(), url=fields.get("url"), host=fields.get("host"),
                      pid=fields.get("pid"), seq=fields.get("seq"),
                      ts=fields["ts"], extra=extra)
    assert got == row["datagram"]


def test_passphrase_of_the_vectors_gives_its_key():
    secrets = {r["secret"]: r["key"] for r in rows("secrets.txt", "secret", "key", "name")}
    passphrases = [r["secret"] for r in ANNOUNCEMENTS if not r["secret"].startswith(b"hex:")]
    assert passphrases, "announcements.txt has a passphrase vector"
    for p in passphrases:
        assert bw.parse_key(p).hex().encode() == secrets[p]


# ---------------------------------------------------------------------------
# Secrets and secret files

def check_key_rows(name, column, parse):
    """Each row's column through parse: its key, or ValueError where the
    key column says "refused". Returns (rows, refused rows)."""
    table = rows(name, column, "key", "name")
    refused = 0
    for row in table:
        what = f"{name}:{row['line']}: {row['name'].decode()}"
        if row["key"] == b"refused":
            refused += 1
            with pytest.raises(ValueError):
                parse(row[column])
                pytest.fail(f"{what}: accepted")
        else:
            assert parse(row[column]).hex().encode() == row["key"], what
    return len(table), refused


def test_each_secret_gives_its_key_or_is_refused():
    total, refused = check_key_rows("secrets.txt", "secret", bw.parse_key)
    assert refused >= 10 and total - refused >= 10


def test_each_secret_file_gives_its_key_or_is_refused():
    total, refused = check_key_rows("secret-files.txt", "file", bw.parse_secret_file)
    assert refused >= 5 and total - refused >= 5


# ---------------------------------------------------------------------------
# Member keys (version 1.3)

MEMBER_KEYS = rows("member-keys.txt", "master", "service", "url", "key", "datagram", "name")
URLS = rows("urls.txt", "url", "canonical", "name")


def test_member_key_rows_cover_what_a_sender_may_get_wrong():
    names = [r["name"] for r in MEMBER_KEYS]
    services = {r["service"] for r in MEMBER_KEYS}
    urls = [r["url"] for r in MEMBER_KEYS]
    assert len(MEMBER_KEYS) >= 6
    assert b"" in services and len(services - {b""}) >= 2, services
    assert any(u.startswith(b"http://[") for u in urls), "an IPv6 url"
    assert any(len(u) >= 260 for u in urls), "a long url"
    assert len({r["master"] for r in MEMBER_KEYS}) >= 2, "two masters"
    assert any(len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1
               for a in urls for b in urls), "two urls one byte apart"
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("row", MEMBER_KEYS, ids=lambda r: f"line{r['line']}")
def test_member_key_is_derived_from_master_service_and_url(row):
    key = bw.member_key(row["master"], row["service"], row["url"])
    assert key.hex().encode() == row["key"], row["name"].decode()


@pytest.mark.parametrize("row", MEMBER_KEYS, ids=lambda r: f"line{r['line']}")
def test_member_datagram_is_signed_with_its_key_and_names_its_member(row):
    key = bytes.fromhex(row["key"].decode())
    fields = fields_of(row["datagram"])
    assert bw.sign(fields, key) == row["datagram"]
    got = dict(fields)
    assert got["url"].encode() == row["url"]
    assert got.get("svc", "").encode() == row["service"]
    # nor does it verify under the master, or any other row's key
    body, mac = split_mac(row["datagram"])
    others = [bytes.fromhex(r["key"].decode()) for r in MEMBER_KEYS if r is not row]
    for other in others + [bw.parse_master(row["master"])]:
        assert bw.tag_hex(other, body) != mac


@pytest.mark.parametrize("row", MEMBER_KEYS, ids=lambda r: f"line{r['line']}")
def test_member_url_is_the_canonical_form_urls_txt_gives(row):
    """A key is derived for the url as the receiver writes it: where
    urls.txt has the url as an input, it is its own canonical form (the
    C unit test checks every row with the receiver's own rule)."""
    shown = {r["url"]: r["canonical"] for r in URLS}
    assert shown.get(row["url"], row["url"]) == row["url"]


def test_member_key_input_is_unambiguous():
    master = "hex:00112233445566778899aabbccddeeff"
    assert bw.member_key(master, "shop", "http://h") != bw.member_key(master, "sho", "phttp://h")
    assert bw.member_key(master, "", "http://h") != bw.member_key(master, "shop", "http://h")
    with pytest.raises(ValueError):
        bw.member_key("a-long-random-shared-cluster-secret", "", "http://h")


# ---------------------------------------------------------------------------
# The receiver's drop table: its macs are what they claim to be

SIGNED_REASONS = {b"ok", b"duplicate field", b"bad ts", b"bad field", b"stale ts",
                  b"wrong service", b"unacceptable url"}
DROPS = (rows("drops.txt", "reason", "datagram", "name")
         + [{k: r[k] for k in ("reason", "datagram", "name")}
            for r in rows("drops-service.txt", "service", "reason", "datagram", "name")])
HEX_KEY = "hex:00112233445566778899aabbccddeeff"


def test_the_drop_table_has_a_row_for_each_reason():
    reasons = Counter(r["reason"] for r in DROPS)
    assert len(DROPS) >= 60
    for reason in SIGNED_REASONS | {b"embedded NUL", b"bad frame", b"mac mismatch"}:
        assert reasons[reason] > 0, reason


@pytest.mark.parametrize("row", [r for r in DROPS if r["reason"] in SIGNED_REASONS],
                         ids=lambda r: r["name"].decode())
def test_rows_past_the_mac_check_are_correctly_signed(row):
    body, mac = split_mac(row["datagram"])
    assert bw.tag_hex(bw.parse_key(HEX_KEY), body) == mac.lower()


@pytest.mark.parametrize("row", [r for r in DROPS if r["reason"] == b"mac mismatch"],
                         ids=lambda r: r["name"].decode())
def test_mac_mismatch_rows_are_not(row):
    body, mac = split_mac(row["datagram"])
    assert bw.tag_hex(bw.parse_key(HEX_KEY), body) != mac.lower()


# ---------------------------------------------------------------------------
# The reader is strict, like the C one

@pytest.mark.parametrize("text, problem", [
    ("a\tb\nx\\q\ty\n", "bad escape"),
    ("a\tb\nx\ty\tz\n", "3 fields"),
    ("a\tc\nx\ty\n", "header"),
    ("a\tb\nx\\\ty\n", "backslash ends"),
    ("a\tb\r\nx\ty\r\n", "raw control"),
    ("# only a comment\n", "no header"),
])
def test_a_damaged_vector_file_is_refused(tmp_path, text, problem):
    (tmp_path / "v.txt").write_bytes(text.encode())
    with pytest.raises(ValueError, match=problem):
        bw.read_vectors("v.txt", ["a", "b"], tmp_path)


# ---------------------------------------------------------------------------
# Sending

def test_send_delivers_the_datagram_to_a_loopback_socket():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(5)
        datagram = bw.announce(HEX_KEY, url="http://127.0.0.1:8080")
        bw.send(datagram, rx.getsockname())
        assert rx.recv(4096) == datagram


def test_send_refuses_non_loopback_addresses():
    with pytest.raises(ValueError):
        bw.send(b"BEACON", ("192.0.2.1", 9))
