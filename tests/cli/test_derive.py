#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""beaconctl derive-key: a member's key from the master (wire format,
version 1.3: member keys), against tests/vectors/member-keys.txt, whose
keys beacon_wire.member_key computed in Python.

Run by ctest as cli_derive:

    BEACONCTL=build/beaconctl /usr/bin/python3 -m pytest -q tests/cli/test_derive.py
"""

import pytest

import beacon_wire as bw
from beaconctl import assert_one_line_error, run

ROWS = bw.read_vectors("member-keys.txt",
                       ["master", "service", "url", "key", "datagram", "name"])
MASTER = ROWS[0]["master"].decode()
PASSPHRASE = "a-long-random-shared-cluster-secret"


def row_id(row):
    return f"line{row['line']}"


def derive(url, service=b"", args=(), secret=None):
    """derive-key's run for url and service (bytes or str; empty: no
    --service)."""
    url = url.decode() if isinstance(url, bytes) else url
    service = service.decode() if isinstance(service, bytes) else service
    opts = ["derive-key", "--url", url] + (["--service", service] if service else [])
    return run(opts + list(args), secret=secret)


def printed(r):
    """(key line, url line) of a successful run: exactly two lines."""
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.split("\n")
    assert len(lines) == 3 and lines[2] == "", repr(r.stdout)
    return lines[0], lines[1]


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_each_row_gives_its_key_and_url(row, secret_file):
    path = secret_file(row["master"] + b"\n")
    key, url = printed(derive(row["url"], row["service"], ["--secret-file", path]))
    assert key == "hex:" + row["key"].decode(), row["name"].decode()
    assert url == row["url"].decode()


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_the_key_line_is_the_members_secret_file(row, secret_file, tmp_path):
    """What derive-key prints, as it is, is a secret file that signs the
    row's datagram (beaconctl sign reads only its first line)."""
    r = derive(row["url"], row["service"], secret=row["master"].decode())
    member = tmp_path / "member.key"
    member.write_text(r.stdout)
    fields = dict(f.split("=", 1) for f in row["datagram"].decode().split()[1:])
    args = ["sign", "--secret-file", str(member), "--url", fields["url"],
            "--host", fields["host"], "--pid", fields["pid"], "--seq", fields["seq"],
            "--ts", fields["ts"]] + (["--service", fields["svc"]] if "svc" in fields else [])
    s = run(args)
    assert s.returncode == 0, s.stderr
    assert s.stdout == row["datagram"].decode() + "\n"


def test_the_master_comes_from_a_file_a_program_or_the_environment(secret_file):
    row = ROWS[1]
    want = printed(derive(row["url"], row["service"], secret=MASTER))
    path = secret_file(MASTER + "\r\n")
    program = f"/bin/sh -c 'echo {MASTER}'"
    assert printed(derive(row["url"], row["service"], ["--secret-file", path])) == want
    assert printed(derive(row["url"], row["service"], ["--secret-exec", program])) == want
    assert printed(derive(row["url"], row["service"], secret="file:" + path)) == want
    assert printed(derive(row["url"], row["service"], secret="exec:" + program)) == want


@pytest.mark.parametrize("given, canonical", [
    ("HtTpS://App.EXAMPLE.com:443/", "https://app.example.com"),
    ("http://[2001:DB8:0:0:0:0:0:5]:8080/", "http://[2001:db8::5]:8080"),
    ("http://10.0.0.5:08080", "http://10.0.0.5:8080"),
    ("AJP://10.0.0.5:8009", "ajp://10.0.0.5"),
])
def test_a_url_is_canonicalized_and_the_key_is_the_canonical_ones(given, canonical):
    for row in ROWS:
        if row["url"] == canonical.encode() and row["master"] == MASTER.encode():
            key, url = printed(derive(given, row["service"], secret=MASTER))
            assert url == canonical
            assert key == "hex:" + row["key"].decode()
            break
    else:
        pytest.fail(f"member-keys.txt has no row for {canonical}")


@pytest.mark.parametrize("url, problem", [
    ("http://a.example/path", "path"), ("http://a.example:0", "port"),
    ("http://user@a.example", "userinfo"), ("ftp://a.example", "scheme"),
    ("uwsgi://a.example", "port"), ("http://", "host"),
])
def test_a_url_the_receiver_refuses_is_refused(url, problem):
    r = derive(url, "shop", secret=MASTER)
    assert_one_line_error(r, must_contain=[url, problem])


@pytest.mark.parametrize("how", ["environment", "file", "exec"])
def test_a_passphrase_master_is_refused_in_one_line(how, secret_file):
    args, secret = {
        "environment": ([], PASSPHRASE),
        "file": (["--secret-file", secret_file(PASSPHRASE + "\n")], None),
        "exec": (["--secret-exec", f"/bin/sh -c 'echo {PASSPHRASE}'"], None),
    }[how]
    r = derive("http://10.0.0.5:8080", "shop", args, secret=secret)
    assert_one_line_error(r, must_contain=["passphrase is refused for a master"])
    assert PASSPHRASE not in r.stderr


@pytest.mark.parametrize("secret, problem", [
    ("hex:0011", "32 hex digits"),
    ("00112233445566778899aabbccddeeff", "passphrase is refused"),
])
def test_a_master_is_hex_and_32_digits(secret, problem):
    assert_one_line_error(derive("http://h", secret=secret), must_contain=[problem])


def test_the_master_is_never_taken_from_the_command_line():
    r = run(["derive-key", "--url", "http://h", "--secret", MASTER])
    assert_one_line_error(r)
    assert MASTER[4:] not in r.stderr
    assert_one_line_error(run(["derive-key", "--url", "http://h"]),
                          must_contain=["--secret-file", "BEACON_SECRET"])


@pytest.mark.parametrize("args, problem", [
    (["derive-key"], "--url URL is required"),
    (["derive-key", "--url", "http://h", "--service", "a b"], "svc= rule"),
    (["derive-key", "--url", "http://h", "--service", "x" * 64], "svc= rule"),
    (["derive-key", "--url", "http://h", "--url", "http://i"], "--url"),
    (["derive-key", "--url", "http://h", "extra"], "extra"),
])
def test_usage_errors(args, problem):
    assert_one_line_error(run(args, secret=MASTER), must_contain=[problem])


def test_a_service_of_63_characters_is_a_service():
    key, _ = printed(derive("http://h", "s" * 63, secret=MASTER))
    assert key == "hex:" + bw.member_key(MASTER, "s" * 63, "http://h").hex()
