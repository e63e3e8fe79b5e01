# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The beacon-status page as people see it: loaded in a real headless
Chromium (Debian's chromium, chromium-driver and python3-selenium, which
`make check` installs), with members in every state beacon and httpd can
put them in. The page must load with no console message at all, show each
member with one combined state, sorted by url, honour ?refresh=N as
mod_status does, and fetch nothing from anywhere. A screenshot is saved to
$BEACON_ARTIFACTS/status-page.png (default build/artifacts/) for CI."""

import os
import re
import shutil
import threading
from pathlib import Path

import pytest

import beacon_wire as bw
from beacon_env import (Announcer, Periodic, receiver_config, start_receiver,
                        wait_member)
from httpd import free_port, wait_for
from beacon_env import sender_httpd
from test_status import STATUS_PAGE, status_json

pytestmark = pytest.mark.beacon

REPO = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
MISSING = ("needs Debian's chromium, chromium-driver and python3-selenium "
           "(make check installs them: scripts/ensure-deps)")
LEASE = 2  # seconds: short, so that a silent member is evicted soon


def artifacts_dir():
    d = Path(os.environ.get("BEACON_ARTIFACTS") or REPO / "build" / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module, quit at the end (only the
    processes its driver started). The flags are what Chromium needs as
    root in a container: no sandbox, no GPU, no /dev/shm."""
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip(MISSING)
    webdriver = pytest.importorskip("selenium.webdriver", reason=MISSING)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--window-size=1280,900",
                "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    from selenium.webdriver.chrome.service import Service
    # the driver's path given: Selenium Manager would otherwise go online
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(10)
    try:
        yield driver
    finally:
        driver.quit()


def load(driver, url):
    """Loads url and returns the console messages it caused (drained)."""
    driver.get_log("browser")  # whatever an earlier page left
    driver.get(url)
    wait_for(lambda: driver.execute_script("return document.readyState") == "complete",
             15, f"{url} loaded")
    return driver.get_log("browser")


class Leaving(Periodic):
    """Says state=leaving every period: stays 'leaving' however slow the
    machine (a single one shows as leaving only until the lease would
    have lapsed)."""

    def __init__(self, port, url, period=0.2):
        super().__init__(period)
        self.announcer, self.url = Announcer(port), url

    def tick(self):
        self.announcer.announce(self.url, host="web-leaving", state="leaving")


class Heartbeats(Periodic):
    """Announces each (url, host) of self.urls every period (a list,
    replaced whole with keep() to change it), with an announcer of its own:
    its timestamps rise whatever other threads send."""

    def __init__(self, port, period=0.2):
        super().__init__(period)
        self.announcer, self.urls = Announcer(port), []
        self.lock = threading.Lock()

    def tick(self):
        with self.lock:
            for url, host in self.urls:
                self.announcer.announce(url, host=host)

    def keep(self, n):
        """Announces only the first n urls from now on; returns once no
        tick is under way, so no announcement of the others is still in
        flight (another announcer's for one of them would cross it and be
        dropped as replayed)."""
        with self.lock:
            self.urls = self.urls[:n]


def proxy_with_page(httpd_factory, members=()):
    udp = free_port()
    h = httpd_factory(status=True, growth=4, members=members,
                      tail_config=STATUS_PAGE + receiver_config(udp, timeout=str(LEASE)))
    h.proxypass_config = ("ProxyPass /balancer-manager !\nProxyPass /server-status !\n"
                          "ProxyPass /beacon-status !\nProxyPass / balancer://cluster/\n")
    start_receiver(h)
    return h, Announcer(udp)


def members_in_every_state(h, ann, hb, b):
    """Active, stopped by admin, evicted (silent), pending add (no growth
    slot left), not managed (static) and one still active that leaves
    next; hb keeps the live ones alive."""
    for name in ("active", "stopped", "evicted", "leaving"):
        ann.announce(b[name].url, host=f"web-{name}")
        wait_member(h, b[name].url)
        if name != "evicted":
            hb.urls = hb.urls + [(b[name].url, f"web-{name}")]
    h.set_worker_status("cluster", b["stopped"].url, S=1)
    ann.announce(b["pending"].url, host="web-pending")
    h.wait_log(r"BCN00037: cannot add backend %s" % re.escape(b["pending"].url))
    ann.announce(b["static"].url, host="<b>static</b>")
    h.wait_log(r"BCN00032: member not managed by beacon: %s" % re.escape(b["static"].url))
    ann.send(bw.sign([("url", b["active"].url), ("ts", bw.now_usec())], "hex:" + "ee" * 16))
    h.wait_log(r"evicted backend %s" % re.escape(b["evicted"].url), timeout=LEASE + 10)


def wait_json_states(h, want):
    def states():
        rx = status_json(h)["receivers"][0]
        got = {m["url"]: m["state"] for m in rx["members"]}
        return rx if got == want and rx["dropped"]["mac_mismatch"] == 1 else None
    return wait_for(states, 15, f"states {want} in the JSON")


def rows_of(driver):
    from selenium.webdriver.common.by import By
    rows = driver.find_elements(By.CSS_SELECTOR, "section.receiver table.members tbody tr")
    return [{"url": r.find_element(By.CSS_SELECTOR, "td").text,
             "key": r.get_attribute("data-state"),
             "badges": [s.text for s in r.find_elements(By.CSS_SELECTOR, "span.st")],
             "cells": [td.text for td in r.find_elements(By.CSS_SELECTOR, "td")],
             "bars": len(r.find_elements(By.CSS_SELECTOR, ".bar span"))}
            for r in rows]


def screenshot(driver, name):
    """Saves the whole page (the window grown to fit it, the browser's own
    frame allowed for) and prints the path."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(height, 4000))
    frame = height - driver.execute_script("return window.innerHeight")
    driver.set_window_size(1280, min(height + max(frame, 0), 4000))
    path = artifacts_dir() / name
    assert driver.save_screenshot(str(path)), f"no screenshot at {path}"
    print(f"\nscreenshot: {path}")
    driver.set_window_size(1280, 900)
    return path


def test_the_page_shows_every_state_in_chromium(httpd_factory, backend_factory, browser):
    static = backend_factory("static")
    h, ann = proxy_with_page(httpd_factory, members=(static.url,))
    h.expect_errors("BCN00037")  # the pending add: no growth slot left
    b = {name: backend_factory(name)
         for name in ("active", "stopped", "evicted", "leaving", "pending")}
    b["static"] = static
    with Heartbeats(ann.addr[1]) as hb:
        members_in_every_state(h, ann, hb, b)
        hb.keep(2)  # active and stopped: leaving stops them
        with Leaving(ann.addr[1], b["leaving"].url):
            h.wait_log(r"backend leaving %s" % re.escape(b["leaving"].url))
            wait_json_states(h, {b["active"].url: "active", b["stopped"].url: "active",
                                 b["evicted"].url: "evicted", b["leaving"].url: "evicted",
                                 b["pending"].url: "pending add",
                                 static.url: "not managed"})
            console = load(browser, h.url + "/beacon-status")
            rows = rows_of(browser)
            path = screenshot(browser, "status-page.png")
            check_counters_and_head(browser)
    assert console == [], f"console messages: {console}"
    assert path.stat().st_size > 10000

    urls = [r["url"] for r in rows]
    assert urls == sorted(urls) and set(urls) == {m.url for m in b.values()}
    by_url = {r["url"]: r for r in rows}
    want = {"active": ("active", ["active"]),
            "stopped": ("stopped", ["stopped by admin"]),
            "evicted": ("evicted", ["evicted"]),
            "leaving": ("leaving", ["leaving"]),
            "pending": ("pending", ["pending add"]),
            "static": ("not-managed", ["not managed"])}
    for name, (key, badges) in want.items():
        row = by_url[b[name].url]
        assert (row["key"], row["badges"]) == (key, badges), (name, row)
    # times for people: "0.2 s ago", never raw microseconds; a lease bar
    assert all(re.fullmatch(r"\d+(\.\d)? (s|min|h|d) ago", r["cells"][2]) for r in rows), rows
    assert by_url[b["active"].url]["bars"] == 1 and by_url[b["evicted"].url]["bars"] == 0
    assert re.fullmatch(r"\d\.\d s", by_url[b["active"].url]["cells"][3])
    assert "retry" in by_url[b["pending"].url]["cells"][1]
    assert "Stop" in by_url[b["stopped"].url]["cells"][1]
    # peer bytes stay text
    assert by_url[static.url]["cells"][4] == "<b>static</b>"


def check_counters_and_head(driver):
    from selenium.webdriver.common.by import By
    warn = driver.find_elements(By.CSS_SELECTOR, ".grid.dropped .warn")
    assert [w.text.split("\n") for w in warn] == [["1", "mac mismatch"]]
    added = [c.text for c in driver.find_elements(By.CSS_SELECTOR, ".grid.events div")]
    assert "4\nadded" in added and "1\nevicted" in added, added
    assert driver.find_element(By.CSS_SELECTOR, 'meta[name="viewport"]')
    # nothing fetched: no script, stylesheet, font or image came from anywhere
    assert driver.execute_script(
        "return performance.getEntriesByType('resource').length") == 0
    assert driver.find_elements(By.CSS_SELECTOR, "script, link[rel=stylesheet]") == []


def test_refresh_as_mod_status_does(httpd_factory, browser):
    udp = free_port()
    h = httpd_factory(status=True, tail_config=STATUS_PAGE + receiver_config(udp))
    h.proxypass_config = "ProxyPass /beacon-status !\nProxyPass /server-status !\n"
    start_receiver(h)
    # mod_status's rule: "refresh" anywhere in the query, N below 1 or not
    # a number is 10, no upper bound; no refresh asked, no header
    for query, want in (("refresh=2", "2"), ("refresh", "10"), ("refresh=0", "10"),
                        ("refresh=-5", "10"), ("refresh=x", "10"), ("refresh=600", "600"),
                        ("a=1&refresh=3", "3"), ("", None)):
        status, headers, _ = h.request("GET", "/beacon-status?" + query)
        assert (status, headers.get("Refresh")) == (200, want), query
    status, headers, _ = h.request("HEAD", "/beacon-status?refresh=4")
    assert (status, headers.get("Refresh")) == (200, "4")
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    # ?json and server-status?auto take no part in it
    assert "Refresh" not in h.request("GET", "/beacon-status?json")[1]

    console = load(browser, h.url + "/beacon-status?refresh=2")
    assert "every 2 s" in browser.find_element("css selector", ".refresh").text
    browser.execute_script("window.beaconMark = 1")
    wait_for(lambda: browser.execute_script("return window.beaconMark === undefined"),
             15, "the page to reload itself")
    console += browser.get_log("browser")
    assert console == [], f"console messages: {console}"


def test_server_status_section_keeps_its_style_to_itself(httpd_factory, backend_factory,
                                                         browser):
    udp = free_port()
    h = httpd_factory(status=True, tail_config=receiver_config(udp))
    start_receiver(h)
    a = backend_factory("a")
    Announcer(udp).announce(a.url)
    wait_member(h, a.url)
    console = load(browser, h.url + "/server-status")
    assert console == [], f"console messages: {console}"
    assert browser.find_element("css selector", ".bcn tr[data-state=active]")
    # every element outside .bcn looks the same with our style sheet off
    changed = browser.execute_script(SCOPE_CHECK)
    assert changed == {"sheets": 1, "outside": changed["outside"], "changed": 0,
                       "inside_changed": True} and changed["outside"] > 20, changed
    screenshot(browser, "server-status.png")


SCOPE_CHECK = """
const ours = Array.from(document.styleSheets)
    .filter(s => s.ownerNode.textContent.includes('.bcn{'));
const all = Array.from(document.body.querySelectorAll('*'));
const outside = all.filter(e => !e.closest('.bcn') && e.tagName !== 'STYLE');
const inside = all.filter(e => e.closest('.bcn'));
const look = els => els.map(e => {
    const c = getComputedStyle(e);
    return [c.font, c.color, c.background, c.border, c.borderCollapse, c.padding,
            c.margin, c.display, c.textAlign].join('|');
});
const before = look(outside), inBefore = look(inside);
ours.forEach(s => s.disabled = true);
const after = look(outside), inAfter = look(inside);
ours.forEach(s => s.disabled = false);
return {sheets: ours.length, outside: outside.length,
        changed: before.filter((v, i) => v !== after[i]).length,
        inside_changed: inBefore.some((v, i) => v !== inAfter[i])};
"""


def test_a_sender_page_in_chromium(httpd_factory, browser):
    backend = sender_httpd(httpd_factory, [f"127.0.0.1:{free_port()}",
                                           f"localhost:{free_port()}"],
                           interval="200ms")
    backend.tail_config += STATUS_PAGE.replace("Require ip 127.0.0.1 ::1",
                                               "Require all granted")
    backend.start()
    wait_for(lambda: status_json(backend)["senders"][0]["sent"] >= 2, 10, "two sent")
    console = load(browser, backend.url + "/beacon-status")
    assert console == [], f"console messages: {console}"
    text = browser.find_element("css selector", "section.sender").text
    assert "localhost" in text and f"http://127.0.0.1:{backend.port}" in text
    assert "datagrams sent" in text and "send errors" in text
    screenshot(browser, "status-page-sender.png")
