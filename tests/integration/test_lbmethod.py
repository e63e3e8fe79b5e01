# Licensed under the Apache License, Version 2.0; see LICENSE.
"""apache2 -t warns when a balancer beacon feeds (a ProxyBeaconBalancer
line) uses an lbmethod that serves announced lbfactors badly, for load
reporting and slow start (issue 34, item 4; the design note's §1.6, §1.8):
bybusyness uses lbfactor only to break ties and herds new members,
bytraffic herds new and recycled members on cumulative byte counts,
heartbeat knows static members only and ignores lbfactor. One line per
balancer, naming it, its method and the one that works (byrequests);
byrequests, httpd's default, and a balancer beacon does not feed get
none."""

import re
import subprocess

import pytest

from beacon_env import receiver_config, start_receiver
from httpd import APACHE2, MODULES_DIR, free_port

pytestmark = pytest.mark.beacon

TAG = "BCN00220"
HEARTBEAT_MODULES = ("heartmonitor", "lbmethod_heartbeat")
SHOP_KEY = "hex:ffeeddccbbaa99887766554433221100"
API_KEY = "hex:0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def load(*modules):
    return "".join(f"LoadModule {m}_module {MODULES_DIR}/mod_{m}.so\n" for m in modules)


def balancer(name, lbmethod):
    lb = f" lbmethod={lbmethod}" if lbmethod else ""
    return f"<Proxy balancer://{name}>\n    ProxySet growth=4{lb}\n</Proxy>\n"


def lbmethod_proxy(httpd_factory, lbmethod, modules=()):
    """A receiver feeding balancer://cluster, whose lbmethod is lbmethod
    (None: not set), with the lbmethod modules loaded."""
    h = httpd_factory(extra_config=load("lbmethod_bybusyness", "lbmethod_bytraffic",
                                        *modules))
    h.proxy_config = balancer("cluster", lbmethod)
    h.tail_config = receiver_config(free_port())
    return h


def warnings(out):
    return [line for line in out.splitlines() if TAG in line]


def assert_one_warning(out, name, lbmethod):
    lines = warnings(out)
    assert len(lines) == 1, out
    assert re.search(rf"\[proxy_beacon:warn\].*{TAG}: ProxyBeaconBalancer: "
                     rf"balancer://{name} uses lbmethod={lbmethod}, .*; use "
                     rf"lbmethod=byrequests", lines[0]), out
    return lines[0]


@pytest.mark.parametrize("lbmethod,why", [
    ("bybusyness", r"lbfactor only to break ties.*new member"),
    ("bytraffic", r"bytes .* since it was created, never aged.*new or recycled member"),
])
def test_an_lbmethod_that_herds_new_members_is_warned_about(httpd_factory, lbmethod, why):
    h = lbmethod_proxy(httpd_factory, lbmethod)
    rc, out = h.check_config()
    assert rc == 0 and "Syntax OK" in out, out
    assert re.search(why, assert_one_warning(out, "cluster", lbmethod)), out


@pytest.mark.skipif(not all((MODULES_DIR / f"mod_{m}.so").exists() for m in HEARTBEAT_MODULES),
                    reason="this apache2 has no mod_heartmonitor / mod_lbmethod_heartbeat")
def test_heartbeat_is_warned_about(httpd_factory):
    h = lbmethod_proxy(httpd_factory, "heartbeat", modules=HEARTBEAT_MODULES)
    rc, out = h.check_config()
    assert rc == 0 and "Syntax OK" in out, out
    assert re.search(r"static BalancerMembers only.*ignores lbfactor",
                     assert_one_warning(out, "cluster", "heartbeat")), out


@pytest.mark.parametrize("lbmethod", ["byrequests", None])
def test_byrequests_and_the_default_are_not_warned_about(httpd_factory, lbmethod):
    h = lbmethod_proxy(httpd_factory, lbmethod)
    rc, out = h.check_config()
    assert rc == 0 and "Syntax OK" in out, out
    assert warnings(out) == [] and "lbmethod" not in out, out


def test_the_warning_is_on_stderr_once_per_beacon_fed_balancer(httpd_factory):
    """Two balancers of one receiver, each its own line; a third, which
    beacon does not feed, may balance as it likes."""
    h = httpd_factory(extra_config=load("lbmethod_bybusyness", "lbmethod_bytraffic"))
    h.proxy_config = (balancer("shop", "bybusyness") + balancer("api", "bytraffic")
                      + balancer("static", "bybusyness"))
    h.proxypass_config = ("ProxyPass /shop/ balancer://shop/\nProxyPass /api/ balancer://api/\n"
                          "ProxyPass /static/ balancer://static/\n")
    h.tail_config = receiver_config(free_port(), balancer=None,
                                    extra=f"ProxyBeaconBalancer shop service=shop secret={SHOP_KEY}\n"
                                          f"ProxyBeaconBalancer api service=api secret={API_KEY}\n")
    h.write_config()
    r = subprocess.run([APACHE2, "-t", "-f", str(h.conf_path)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    assert r.returncode == 0 and TAG not in r.stdout, (r.stdout, r.stderr)
    lines = warnings(r.stderr)
    assert len(lines) == 2, r.stderr
    assert_one_warning("\n".join(l for l in lines if "shop" in l), "shop", "bybusyness")
    assert_one_warning("\n".join(l for l in lines if "api" in l), "api", "bytraffic")
    assert "static" not in r.stderr, r.stderr


def test_a_virtual_hosts_receiver_reads_the_balancer_of_its_server(httpd_factory):
    """The balancer is defined, lbmethod and all, in the main server; the
    receiver in a virtual host, which inherits it."""
    h = lbmethod_proxy(httpd_factory, "bybusyness")
    h.tail_config = (f"<VirtualHost 127.0.0.1:{h.port}>\n    ServerName rx.test\n"
                     + receiver_config(free_port()) + "</VirtualHost>\n")
    rc, out = h.check_config()
    assert rc == 0, out
    assert_one_warning(out, "cluster", "bybusyness")


def test_a_start_logs_the_warning_once_per_balancer(httpd_factory):
    """The error log of a server that starts has it too (apache2 -t's goes
    to the terminal, not there), once: the configuration is read twice
    at start, and only the second reading is the server's."""
    h = lbmethod_proxy(httpd_factory, "bybusyness")
    start_receiver(h)
    assert_one_warning(h.error_log(), "cluster", "bybusyness")
