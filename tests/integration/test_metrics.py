# Licensed under the Apache License, Version 2.0; see LICENSE.
"""/beacon-status?metrics against the tools that read it: promtool's lint
finds nothing on a proxy's page or a sender's, a real Prometheus server
scrapes the page (with the scrape config docs/monitoring.md shows) and
its HTTP API then holds the member and the drops this test caused, and a
peer's bytes in a label value come out escaped as the format says.
The alerting rules in contrib/prometheus pass `promtool check rules` and
their unit tests (`promtool test rules`).

promtool and prometheus are Debian's `prometheus` package, which
scripts/ensure-deps installs for `make check`."""

import json
import re
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import beacon_wire as bw
from beacon_env import Heartbeat, wait_member
from httpd import REPO, ChildProcess, free_port, wait_for
from beacon_env import sender_httpd
from test_status import STATUS_PAGE, proxy_with_status

pytestmark = pytest.mark.beacon

PROMTOOL = Path("/usr/bin/promtool")
PROMETHEUS = Path("/usr/bin/prometheus")
MONITORING_DOC = REPO / "docs" / "monitoring.md"
ALERT_RULES = REPO / "contrib" / "prometheus" / "beacon-alerts.yml"
ALERT_RULES_TEST = ALERT_RULES.with_name("beacon-alerts.test.yml")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# A host a peer may announce: the format's three escapes, and bytes
# outside ASCII (the receiver keeps what is not a space or NUL).
ODD_HOST = 'we"b\\1\n\u00ff'
# ... as the page must write it, and as a parser gives it back.
ODD_HOST_WRITTEN = 'we\\"b\\\\1\\n\\\\xc3\\\\xbf'
ODD_HOST_PARSED = 'we"b\\1\n\\xc3\\xbf'

SAMPLE_RE = re.compile(r'^(?P<name>[a-z_]+)\{(?P<labels>.*)\} (?P<value>\S+)$')
LABEL_RE = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


def need(tool):
    assert tool.is_file(), f"{tool} is missing: Debian's prometheus package " \
                           "(scripts/ensure-deps installs it)"
    return str(tool)


def metrics_page(h):
    status, headers, body = h.request("GET", "/beacon-status?metrics")
    assert status == 200, body
    assert headers["Content-Type"] == CONTENT_TYPE
    return body


def unescape(value):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def samples(body):
    """[(name, {label: value}, value)] of every sample line."""
    out = []
    for line in body.splitlines():
        if line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = {k: unescape(v) for k, v in LABEL_RE.findall(m.group("labels"))}
        out.append((m.group("name"), labels, float(m.group("value"))))
    return out


def find(body, name, **labels):
    """The values of the samples of name whose labels include labels."""
    return [v for n, l, v in samples(body)
            if n == name and all(l.get(k) == w for k, w in labels.items())]


def promtool_check_metrics(body):
    r = subprocess.run([need(PROMTOOL), "check", "metrics"], input=body,
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), \
        f"promtool check metrics:\n{r.stdout}{r.stderr}\n--- page:\n{body}"


def test_the_pages_pass_promtool_and_escape_peer_bytes(httpd_factory, backend_factory):
    h, ann = proxy_with_status(httpd_factory)
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{ann.addr[1]}"], interval="200ms")
    backend.tail_config += STATUS_PAGE.replace("Require ip 127.0.0.1 ::1",
                                               "Require all granted")
    backend.start()
    odd = backend_factory("odd")
    ann.announce(odd.url, host=ODD_HOST)
    wait_member(h, odd.url)
    wait_member(h, f"http://127.0.0.1:{backend.port}")
    for _ in range(2):
        ann.send(bw.sign([("url", odd.url), ("ts", bw.now_usec())], "hex:" + "ee" * 16))
    wait_for(lambda: find(metrics_page(h), "beacon_datagrams_dropped_total",
                          reason="mac_mismatch") == [2], 10, "2 mac mismatches")

    page = metrics_page(h)
    promtool_check_metrics(page)
    assert f'host="{ODD_HOST_WRITTEN}"' in page
    info = [l for n, l, _ in samples(page) if n == "beacon_member_info"
            and l["member"] == odd.url]
    assert info == [{"listen": f"127.0.0.1:{ann.addr[1]}", "balancer": "balancer://cluster",
                     "member": odd.url, "state": "active", "admin_held": "false",
                     "host": ODD_HOST_PARSED}]
    assert find(page, "beacon_growth_slots", state="free") == [2]
    assert find(page, "beacon_events_total", event="added") == [2]
    assert find(page, "beacon_receiver_listening") == [1]

    def sent_three():
        page = metrics_page(backend)
        [sent] = find(page, "beacon_sender_datagrams_sent_total")
        return page if sent >= 3 else None
    sender_page = wait_for(sent_three, 10, "three announcements counted by the sender")
    promtool_check_metrics(sender_page)
    target = f"127.0.0.1:{ann.addr[1]}"
    assert find(sender_page, "beacon_sender_send_errors_total", target=target,
                address=target, advertise=f"http://127.0.0.1:{backend.port}") == [0]
    assert find(sender_page, "beacon_sender_target_addresses", target=target) == [1]
    assert find(sender_page, "beacon_member_info") == []


def test_admin_held_is_httpds_flags_and_state_is_beacons(httpd_factory, backend_factory):
    """A member an admin Stopped, or Disabled, is still active to beacon,
    and held; a member beacon evicted carries beacon's Disabled, not an
    admin's."""
    h, ann = proxy_with_status(httpd_factory, timeout="2")
    a, b, c = backend_factory("a"), backend_factory("b"), backend_factory("c")
    ann.announce(b.url)
    with Heartbeat(ann, a.url), Heartbeat(ann, c.url):
        for m in (a, b, c):
            wait_member(h, m.url)
        h.set_worker_status("cluster", a.url, S=1)
        h.set_worker_status("cluster", c.url, D=1)
        h.wait_log(r"evicted backend %s" % b.url, timeout=15)

        def settled():
            page = metrics_page(h)
            info = {l["member"]: (l["state"], l["admin_held"])
                    for n, l, _ in samples(page) if n == "beacon_member_info"}
            return page if info == {a.url: ("active", "true"),
                                    b.url: ("evicted", "false"),
                                    c.url: ("active", "true")} else None
        page = wait_for(settled, 10, "a and c held by the admin, b evicted by beacon")
    promtool_check_metrics(page)
    assert 0 < find(page, "beacon_member_lease_remaining_seconds", member=a.url)[0] <= 2
    assert find(page, "beacon_member_lease_remaining_seconds", member=b.url) == []
    assert find(page, "beacon_member_last_announcement_age_seconds", member=b.url)[0] >= 2
    assert find(page, "beacon_events_total", event="evicted") == [1]
    assert find(page, "beacon_receiver_records", state="evicted") == [1]


# ---- a real Prometheus server -------------------------------------------------

def scrape_config(target):
    """The scrape job docs/monitoring.md shows, for target, scraped every
    second: the doc's example is what is tested."""
    text = MONITORING_DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- scrape-config -->\n```yaml\n(.*?)```", text, re.S)
    assert m, f"no ```yaml block after <!-- scrape-config --> in {MONITORING_DOC}"
    job = m.group(1)
    assert "proxy.example.com:80" in job
    return ("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            + job.replace("proxy.example.com:80", target))


class Prometheus(ChildProcess):
    """A private Prometheus on 127.0.0.1, its data in workdir."""

    def __init__(self, workdir, config):
        self.port = free_port()
        (workdir / "prometheus.yml").write_text(config)
        self.log = open(workdir / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            [need(PROMETHEUS), f"--config.file={workdir / 'prometheus.yml'}",
             f"--storage.tsdb.path={workdir / 'prometheus-data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())

    def ready(self):
        assert self.running(), "prometheus exited; see prometheus.log"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready",
                                        timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False

    def query(self, expr):
        """[(labels, value)] of an instant query."""
        doc = self.api("/api/v1/query", query=expr)
        assert doc["status"] == "success", doc
        return [(r["metric"], r["value"][1]) for r in doc["data"]["result"]]

    def close(self):
        self.stop()
        self.log.close()


@pytest.fixture
def prometheus(workdir):
    started = []

    def start(config):
        p = Prometheus(workdir, config)
        started.append(p)
        wait_for(p.ready, 120, "prometheus to be ready", interval=0.5)
        return p

    yield start
    for p in started:
        p.close()


def test_prometheus_scrapes_the_member_and_the_drops(httpd_factory, backend_factory,
                                                      prometheus):
    # a lease longer than any wait below: the member stays active throughout
    h, ann = proxy_with_status(httpd_factory, timeout="300")
    a = backend_factory("a")
    ann.announce(a.url, host=ODD_HOST)
    wait_member(h, a.url)
    for _ in range(3):
        ann.send(bw.sign([("url", a.url), ("ts", bw.now_usec())], "hex:" + "ee" * 16))
    wait_for(lambda: find(metrics_page(h), "beacon_datagrams_dropped_total",
                          reason="mac_mismatch") == [3], 10, "3 mac mismatches")
    prom = prometheus(scrape_config(f"127.0.0.1:{h.port}"))
    listen = f"127.0.0.1:{ann.addr[1]}"

    def scraped():
        members = prom.query(f'beacon_member_info{{member="{a.url}"}}')
        drops = prom.query('beacon_datagrams_dropped_total{reason="mac_mismatch"}')
        return (members, drops) if members and drops else None
    members, drops = wait_for(scraped, 120, "the member and the drops in Prometheus",
                              interval=0.5)
    [(labels, value)] = members
    assert value == "1"
    assert {k: labels[k] for k in ("listen", "balancer", "member", "state",
                                   "admin_held", "host")} == \
        {"listen": listen, "balancer": "balancer://cluster", "member": a.url,
         "state": "active", "admin_held": "false", "host": ODD_HOST_PARSED}
    assert [(d[0]["listen"], d[1]) for d in drops] == [(listen, "3")]
    assert prom.query('up{job="beacon"}')[0][1] == "1"
    lease = prom.query(f'beacon_member_lease_remaining_seconds{{member="{a.url}"}}')
    assert 0 < float(lease[0][1]) <= 300


def test_the_alerting_rules_pass_promtool_and_their_unit_tests():
    for args in (["check", "rules", ALERT_RULES.name],
                 ["test", "rules", ALERT_RULES_TEST.name]):
        r = subprocess.run([need(PROMTOOL), *args], cwd=ALERT_RULES.parent,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"promtool {' '.join(args)}:\n{r.stdout}{r.stderr}"
    text = MONITORING_DOC.read_text(encoding="utf-8")
    for alert in re.findall(r"^\s*- alert: (\w+)", ALERT_RULES.read_text(), re.M):
        assert alert in text, f"{alert} is not described in {MONITORING_DOC}"
