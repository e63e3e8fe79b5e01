# Licensed under the Apache License, Version 2.0; see LICENSE.
"""ProxyBeaconContexts: the request paths (contexts) a module sender
announces it serves, as ctx= in every announcement (wire format 1.2).
What a valid context is, is libbeacon's rule; these tests check that the
directive applies it, adds its lines up, and says what is wrong at
apache2 -t."""

import pytest

from beacon_env import (SECRET, make_proxy, receiver_config, refused_by_apache2_t,
                        sender_httpd, wait_member)
from test_sender import Datagrams, datagrams  # noqa: F401 (the fixture)

pytestmark = pytest.mark.beacon


def announced_ctx(httpd_factory, datagrams, contexts):
    """The ctx= of the first announcement of a sender configured with the
    ProxyBeaconContexts lines contexts (None: it has no ctx=)."""
    backend = sender_httpd(httpd_factory, [datagrams.target], interval="30",
                           extra="".join(f"ProxyBeaconContexts {line}\n"
                                         for line in contexts))
    backend.start()
    return datagrams.until(lambda d: True, 10, "the first announcement")[-1].get("ctx")


def test_a_sender_announces_its_contexts_in_every_announcement(httpd_factory,
                                                              datagrams):
    backend = sender_httpd(httpd_factory, [datagrams.target], interval="30",
                           extra="ProxyBeaconContexts /shop /cart\n")
    backend.start()
    first = datagrams.until(lambda d: True, 10, "the first announcement")[-1]
    assert first["ctx"] == "/shop,/cart", first
    backend.stop()
    leaving = datagrams.until(lambda d: d.get("state") == "leaving", 5,
                              "state=leaving at the stop")[-1]
    assert leaving["ctx"] == "/shop,/cart", leaving


def test_a_receiver_accepts_what_the_sender_signs(httpd_factory):
    """The ctx= field is signed with the rest: a proxy verifies the
    announcement and adds the member."""
    proxy, ann = make_proxy(httpd_factory)
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{ann.addr[1]}"],
                           extra="ProxyBeaconContexts /shop /cart\n")
    backend.start()
    wait_member(proxy, f"http://127.0.0.1:{backend.port}")


def test_repeated_lines_add_up_and_a_path_named_twice_counts_once(httpd_factory,
                                                                  datagrams):
    assert announced_ctx(httpd_factory, datagrams,
                         ["/shop /cart", "/cart /api/v1 /shop", "/"]) == \
        "/shop,/cart,/api/v1,/"


def test_sixteen_paths_of_eighty_bytes_are_announced(httpd_factory, datagrams):
    """The most the wire format allows, a duplicate besides, fits one
    announcement."""
    paths = [f"/{i:02d}" + "x" * 77 for i in range(16)]
    assert all(len(p) == 80 for p in paths)
    assert announced_ctx(httpd_factory, datagrams,
                         [" ".join(paths[:10]), " ".join(paths[9:])]) == ",".join(paths)


def test_a_sender_without_the_directive_announces_no_contexts(httpd_factory,
                                                              datagrams):
    assert announced_ctx(httpd_factory, datagrams, []) is None


SENDER = f"ProxyBeaconAddress 127.0.0.1:5556\nProxyBeaconSecret {SECRET}\n"
RULE = ("/ or /seg[/seg...], a segment 1 or more of A-Z a-z 0-9 . _ ~ - "
        "(not . or ..), at most 80 bytes")
MANY = " ".join(f"/p{i}" for i in range(16))
CONTEXT_ERRORS = [
    ("no path", SENDER + "ProxyBeaconContexts\n",
     "ProxyBeaconContexts: expects 1 to 16 paths, e.g. /shop /cart"),
    ("an empty segment", SENDER + "ProxyBeaconContexts /shop /a//b\n",
     f"ProxyBeaconContexts: '/a//b' is not a context ({RULE})"),
    ("no leading slash", SENDER + "ProxyBeaconContexts shop\n",
     "ProxyBeaconContexts: 'shop' is not a context ("),
    ("a trailing slash", SENDER + "ProxyBeaconContexts /a/\n",
     "ProxyBeaconContexts: '/a/' is not a context ("),
    ("a dot segment", SENDER + "ProxyBeaconContexts /a/..\n",
     "ProxyBeaconContexts: '/a/..' is not a context ("),
    ("a path of 81 bytes", SENDER + f"ProxyBeaconContexts /{'x' * 80}\n",
     f"ProxyBeaconContexts: '/{'x' * 80}' is not a context ("),
    ("a path parameter", SENDER + "ProxyBeaconContexts /shop;v=1\n",
     "ProxyBeaconContexts: '/shop;v=1' is not a context ("),
    ("17 paths on one line", SENDER + f"ProxyBeaconContexts {MANY} /p16\n",
     "ProxyBeaconContexts: '/p16' is one path too many: at most 16 in a server"),
    ("17 paths on two lines", SENDER + f"ProxyBeaconContexts {MANY}\n"
     "ProxyBeaconContexts /p3 /p16\n",
     "ProxyBeaconContexts: '/p16' is one path too many: at most 16 in a server"),
    ("contexts in a receiver", receiver_config(5555) + "ProxyBeaconContexts /shop\n",
     "ProxyBeaconContexts needs ProxyBeaconAddress in the same server (%s:%d)"),
    ("contexts in a server without a role",
     f"ProxyBeaconSecret {SECRET}\nProxyBeaconContexts /shop\n",
     "ProxyBeaconContexts needs ProxyBeaconAddress in the same server (%s:%d)"),
    ("contexts in a virtual host of a sender: roles are not inherited",
     SENDER + "<VirtualHost 127.0.0.1:5557>\n    ProxyBeaconContexts /shop\n"
     "</VirtualHost>\n",
     "ProxyBeaconContexts needs ProxyBeaconAddress in the same server (%s:%d)"),
    ("contexts in a directory", SENDER + "<Location /x>\n"
     "    ProxyBeaconContexts /shop\n</Location>\n",
     "ProxyBeaconContexts not allowed in <Location> context"),
]


@pytest.mark.parametrize("case,config,message", CONTEXT_ERRORS,
                         ids=[c[0] for c in CONTEXT_ERRORS])
def test_bad_contexts_fail_apache2_t(httpd_factory, case, config, message):
    out = refused_by_apache2_t(httpd_factory, case, config, message)
    assert len([ln for ln in out.splitlines() if "ProxyBeaconContexts" in ln]) == 1, out


def test_good_contexts_pass_apache2_t(httpd_factory):
    """Sixteen distinct paths, /shop twice."""
    thirteen = " ".join(f"/p{i}" for i in range(13))
    h = httpd_factory(tail_config=SENDER + "ProxyBeaconContexts / /shop /a.b/c_d/~e-f\n"
                                           f"ProxyBeaconContexts {thirteen} /shop\n")
    assert h.check_config() == (0, "Syntax OK\n")
