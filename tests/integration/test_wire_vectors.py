# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The Python sender against the known answers of wire-format.md.

The integration tests trust beacon_wire to speak the protocol; these
vectors are what earns that trust, independently of the C library.
"""

import socket

import pytest

import beacon_wire as bw

HEX_KEY = "hex:00112233445566778899aabbccddeeff"
PASSPHRASE = "a-long-random-shared-cluster-secret"
ANNOUNCE_17 = [("url", "http://10.0.0.5:8080"), ("host", "web-1"),
               ("pid", 4242), ("seq", 17), ("ts", 1796000000000000)]


def test_siphash_paper_vector_for_the_empty_message():
    key = bytes(range(16))
    assert bw.tag_hex(key, b"") == "310e0edd47db6f72"


def test_siphash_paper_vector_for_fifteen_bytes_crosses_a_block():
    # Vector 15 of the paper's 64 (message 00..0e): one full block + 7-byte tail.
    key = bytes(range(16))
    assert bw.tag_hex(key, bytes(range(15))) == "e545be4961ca29a1"


def test_announcement_vector_with_hex_key():
    want = (b"BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 seq=17 "
            b"ts=1796000000000000 mac=f73e29a869ca2b00")
    assert bw.sign(ANNOUNCE_17, HEX_KEY) == want


def test_heartbeat_vector_without_url():
    fields = [("host", "web-1"), ("pid", 4242), ("seq", 18), ("ts", 1796000000000001)]
    want = (b"BEACON host=web-1 pid=4242 seq=18 ts=1796000000000001 "
            b"mac=2cdf1be0166382fa")
    assert bw.sign(fields, HEX_KEY) == want


def test_passphrase_key_derivation_and_vector():
    assert bw.parse_key(PASSPHRASE).hex() == "350dda9f6098771e041755b6923de06e"
    want = (b"BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 seq=17 "
            b"ts=1796000000000000 mac=f3bcb2028034a744")
    assert bw.sign(ANNOUNCE_17, PASSPHRASE) == want


def test_announce_writes_fields_in_wire_order():
    got = bw.announce(HEX_KEY, url="http://10.0.0.5:8080", host="web-1",
                      pid=4242, seq=17, ts=1796000000000000)
    assert got == bw.sign(ANNOUNCE_17, HEX_KEY)


@pytest.mark.parametrize("secret", [
    "hex:00112233445566778899aabbccddeef",     # 31 digits
    "hex:00112233445566778899aabbccddeeffz",   # 33 characters
    "hex:00112233445566778899aabbccddeefg",    # non-hex digit
    "fifteen-bytes!!",                         # passphrase one byte short
])
def test_bad_secrets_are_refused(secret):
    with pytest.raises(ValueError):
        bw.parse_key(secret)


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
