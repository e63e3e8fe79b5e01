#!/usr/bin/python3
# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Member keys (wire format, version 1.3) in beaconctl: derive-key, a
member's key from the master, against tests/vectors/member-keys.txt, whose
keys beacon_wire.member_key computed in Python; listen with a master
(derive mode), verifying what send signs with such a key; and the derive:
prefix of BEACON_SECRET in each command.

Run by ctest as cli_derive:

    BEACONCTL=build/beaconctl /usr/bin/python3 -m pytest -q tests/cli/test_derive.py
"""

import re

import pytest

import beacon_wire as bw
from beaconctl import assert_one_line_error, now_usec, run, sign_body, udp_send

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


# ---------------------------------------------------------------------------
# The derive: prefix of BEACON_SECRET, as ProxyBeaconSecret takes it.

def test_derive_key_takes_the_master_as_proxy_beacon_secret_says_it(secret_file):
    row = ROWS[1]
    want = printed(derive(row["url"], row["service"], secret=MASTER))
    path = secret_file(MASTER + "\n")
    program = f"/bin/sh -c 'echo {MASTER}'"
    for secret in ("derive:" + MASTER, "DERIVE:" + MASTER, "derive:file:" + path,
                   "derive:exec:" + program):
        assert printed(derive(row["url"], row["service"], secret=secret)) == want, secret


@pytest.mark.parametrize("command", [
    ["sign", "--url", "http://127.0.0.1:8200", "--ts", "now"],
    ["send", "--once", "--to", "127.0.0.1:9", "--url", "http://127.0.0.1:8200"],
])
def test_a_sender_given_a_master_is_refused_in_one_line(command):
    r = run(command, secret="derive:" + MASTER)
    assert_one_line_error(r, must_contain=["BEACON_SECRET", "master", "derive-key"])
    assert MASTER[4:] not in r.stderr


# ---------------------------------------------------------------------------
# listen with a master: what a proxy with ProxyBeaconSecret derive:... decides.

def member_key_file(tmp_path, url, service=None):
    """derive-key's output for url (and service) under MASTER, as a file:
    the member's secret file."""
    r = derive(url, service or "", secret=MASTER)
    key, _ = printed(r)
    path = tmp_path / f"member-{abs(hash((url, service)))}.key"
    path.write_text(r.stdout)
    return str(path), key


def send_once(listener, url, key_file, service=None):
    """send --once with the member's key file; listen's line for it."""
    args = ["send", "--once", "--to", f"127.0.0.1:{listener.port}", "--url", url,
            "--secret-file", key_file] + (["--service", service] if service else [])
    r = run(args)
    assert r.returncode == 0, r.stderr
    return listener.expect(r"^(accepted|dropped) ")


def master_listener(listen, secret_file, how, *extra):
    """listen with MASTER as its only secret, given the way how says."""
    args, secret = {
        "derive:hex": ([], "derive:" + MASTER),
        "derive:file": ([], "derive:file:" + secret_file(MASTER + "\n")),
        "derive:exec": ([], f"derive:exec:/bin/sh -c 'echo {MASTER}'"),
        "--master-file": (["--master-file", secret_file(MASTER + "\n")], None),
        "--master-exec": (["--master-exec", f"/bin/sh -c 'echo {MASTER}'"], None),
    }[how]
    return listen(*args, *extra, secret=secret)


@pytest.mark.parametrize("how", ["derive:hex", "derive:file", "derive:exec",
                                 "--master-file", "--master-exec"])
def test_listen_with_a_master_accepts_the_member_key_send_signs_with(
        listen, secret_file, tmp_path, how):
    listener = master_listener(listen, secret_file, how)
    key_file, _ = member_key_file(tmp_path, "HTTP://127.0.0.1:8201/", "shop")
    # send sends the url in canonical form, the form the key is derived for
    line = send_once(listener, "HTTP://127.0.0.1:8201/", key_file, "shop")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8201 host=\S+ pid=\d+ "
                     r"seq=0 ts=\d+ svc=shop from 127\.0\.0\.1:\d+ -> add$", line), line


def test_listen_service_with_a_master(listen, secret_file, tmp_path):
    listener = master_listener(listen, secret_file, "derive:hex", "--service", "shop")
    key_file, _ = member_key_file(tmp_path, "http://127.0.0.1:8207", "shop")
    line = send_once(listener, "http://127.0.0.1:8207", key_file, "shop")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8207 .* svc=shop from ", line)


def test_the_key_of_one_member_for_another_url_is_a_mac_mismatch_naming_it(
        listen, secret_file, tmp_path):
    listener = master_listener(listen, secret_file, "--master-file")
    key_file, _ = member_key_file(tmp_path, "http://127.0.0.1:8202", "shop")
    line = send_once(listener, "http://127.0.0.1:8203", key_file, "shop")
    assert re.search(r"^dropped mac mismatch from 127\.0\.0\.1:\d+ \(member key "
                     r"derived for svc=shop url=http://127\.0\.0\.1:8203\): "
                     r'"BEACON url=http://127\.0\.0\.1:8203 ', line), line
    # another service, or none: the key is derived for what the datagram says
    line = send_once(listener, "http://127.0.0.1:8202", key_file, "cart")
    assert re.search(r"^dropped mac mismatch from 127\.0\.0\.1:\d+ \(member key "
                     r"derived for svc=cart url=http://127\.0\.0\.1:8202\): ", line), line
    line = send_once(listener, "http://127.0.0.1:8202", key_file)
    assert re.search(r"^dropped mac mismatch from 127\.0\.0\.1:\d+ \(member key "
                     r"derived for svc=\(none\) url=http://127\.0\.0\.1:8202\): ",
                     line), line
    # the member itself still gets in
    line = send_once(listener, "http://127.0.0.1:8202", key_file, "shop")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8202 ", line), line


def test_the_derived_for_bytes_are_escaped(listen, secret_file):
    listener = master_listener(listen, secret_file, "derive:hex")
    body = f'BEACON url=http://127.0.0.1:8204 ts={now_usec()} svc=a"b\\c'
    udp_send(listener.port, sign_body(body, "hex:" + "00" * 16))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped mac mismatch from 127\.0\.0\.1:\d+ \(member key "
                     r"derived for svc=a\\x22b\\x5cc url=http://127\.0\.0\.1:8204\)",
                     line), line


def test_a_url_not_canonical_is_refused_and_shown(listen, secret_file):
    listener = master_listener(listen, secret_file, "derive:hex")
    url = 'HTTP://127.0.0.1:8205/'
    key = "hex:" + bw.member_key(MASTER, "shop", url).hex()
    udp_send(listener.port, sign_body(f"BEACON url={url} ts={now_usec()} svc=shop", key))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped url not canonical from 127\.0\.0\.1:\d+: "
                     r"url=HTTP://127\.0\.0\.1:8205/ \(canonical: "
                     r"http://127\.0\.0\.1:8205\)$", line), line
    udp_send(listener.port, sign_body(f'BEACON url=http://h"\\ ts={now_usec()}', key))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped url not canonical from 127\.0\.0\.1:\d+: "
                     r"url=http://h\\x22\\x5c \(", line), line
    # a heartbeat has no url to derive a key for
    udp_send(listener.port, sign_body(f"BEACON ts={now_usec()}", key))
    line = listener.expect(r"^(accepted|dropped) ")
    assert re.search(r"^dropped url not canonical from 127\.0\.0\.1:\d+: no url=$",
                     line), line


def test_keys_and_masters_together_as_in_a_migration(listen, secret_file, tmp_path):
    other = "hex:ffeeddccbbaa99887766554433221100"
    listener = listen("--secret-file", secret_file(other + "\n"),
                      "--master-file", secret_file(MASTER + "\n"), secret=None)
    key_file, _ = member_key_file(tmp_path, "http://127.0.0.1:8206", "shop")
    line = send_once(listener, "http://127.0.0.1:8206", key_file, "shop")
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8206 ", line), line
    line = send_once(listener, "http://127.0.0.1:8208", secret_file(other + "\n"))
    assert re.search(r"^accepted url=http://127\.0\.0\.1:8208 ", line), line


@pytest.mark.parametrize("how", ["environment", "file", "exec"])
def test_listen_refuses_a_passphrase_master_in_one_line(how, secret_file):
    args, secret = {
        "environment": ([], "derive:" + PASSPHRASE),
        "file": (["--master-file", secret_file(PASSPHRASE + "\n")], None),
        "exec": (["--master-exec", f"/bin/sh -c 'echo {PASSPHRASE}'"], None),
    }[how]
    r = run(["listen", "--bind", "127.0.0.1:0"] + args, secret=secret)
    assert_one_line_error(r, must_contain=["passphrase is refused for a master"])
    assert PASSPHRASE not in r.stderr


def test_listen_takes_at_most_four_keys_and_masters(secret_file):
    f = secret_file(MASTER + "\n")
    r = run(["listen", "--bind", "127.0.0.1:0", "--secret-file", f] +
            ["--master-file", f] * 4)
    assert_one_line_error(r, must_contain=["--master-file", "at most 4"])
