# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Reserved member slots (ProxyBeaconBalancer NAME slots=N): more members
than httpd's growth= cap of 100 in one balancer.

What must hold: N placeholders (http://slot-K.beacon.invalid, disabled)
wait in the balancer from the start; a new url takes one at once, before
any growth slot, and serves; no view counts a placeholder as a member;
restarts bring every member back into its slot; a member that left frees
its slot for the next new url; a url past every slot is refused with the
no-slot line; and apache2 -t refuses a bad slots=.

The backends are one process answering on hundreds of loopback addresses
(many_backends.py); the announcements go out in bulk, and every wait polls
balancer-manager's XML or ?json once for all members."""

import collections
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from beacon_env import (Announcer, Heartbeat, Periodic, enabled, receiver_config, restart,
                        start_receiver)
from httpd import free_port, wait_for
from many_backends import ManyBackends
from test_status import STATUS_PAGE

pytestmark = pytest.mark.beacon

PLACEHOLDER_RE = re.compile(r"http://slot-(\d+)\.beacon\.invalid")
# The no-slot line (BCN00037), in its wording with or without "growth".
NO_SLOT_RE = (r"(BCN\d{5}): cannot add backend %s to balancer://cluster: "
              r"no free (?:growth )?slot")
RECYCLED_RE = re.compile(r"BCN00038: recycled slot of (\S+) for (\S+) in balancer://cluster\b")
RESTORED_RE = r"BCN00011: restored %d member\(s\)"


# ---- helpers -------------------------------------------------------------------

def slots_proxy(httpd_factory, slots, growth=None, timeout=None):
    """A started proxy whose balancer://cluster reserves slots= (and has
    ProxySet growth= only when growth is given); its beacon-status page at
    /beacon-status. Returns (httpd, Announcer)."""
    udp = free_port()
    h = httpd_factory(status=True, tail_config=STATUS_PAGE + receiver_config(
        udp, balancer=f"cluster slots={slots}", timeout=timeout))
    h.proxy_config = ("<Proxy balancer://cluster>\n"
                      + (f"    ProxySet growth={growth}\n" if growth else
                         "    ProxySet lbmethod=byrequests\n")
                      + "</Proxy>\n")
    h.proxypass_config = ("ProxyPass /balancer-manager !\nProxyPass /beacon-status !\n"
                          "ProxyPass /server-status !\nProxyPass / balancer://cluster/\n")
    start_receiver(h)
    return h, Announcer(udp)


def backends(workdir, count, block):
    """count backends on 127.0.block.1 and up (ManyBackends), started; the
    fixtures stop what they started, so the test stops these itself."""
    return ManyBackends(workdir, count, block).start()


def placeholders(workers):
    return [w for w in workers if PLACEHOLDER_RE.fullmatch(w["name"])]


def members_in_rotation(h, urls):
    """The urls that are enabled members of balancer://cluster now."""
    wanted = set(urls)
    return {w["name"] for w in h.balancer_members() if w["name"] in wanted and enabled(w)}


def join_all(h, ann, urls, timeout):
    """Announces every url once, then again those not yet in rotation (a
    datagram the kernel dropped), until all are members in rotation."""
    for u in urls:
        ann.announce(u)

    def joined():
        missing = set(urls) - members_in_rotation(h, urls)
        for u in missing:
            ann.announce(u)
        return not missing
    wait_for(joined, timeout, f"{len(urls)} urls in rotation", interval=0.25)


def serve_each(h, names, timeout=60):
    """GETs / from 8 threads until every backend of names answered; every
    answer must be 200 from one of names (never a placeholder's error)."""
    names = set(names)
    seen, bad = set(), []
    lock = threading.Lock()

    def one(_):
        status, body = h.get("/")
        with lock:
            (seen.add(body) if status == 200 and body in names
             else bad.append((status, body[:100])))

    def all_seen():
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(max(50, len(names) - len(seen)))))
        assert not bad, f"unexpected answers {bad[:5]} ({len(bad)} in all)"
        return seen >= names
    wait_for(all_seen, timeout, f"answers from all {len(names)} backends", interval=0)


def receiver_json(h):
    status, body = h.get("/beacon-status?json")
    assert status == 200, body[:300]
    return json.loads(body)["receivers"][0]


def json_members(h):
    """The member urls of ?json, as a set; AssertionError on a repeat."""
    urls = [m["url"] for m in receiver_json(h)["members"]]
    assert len(urls) == len(set(urls)), urls
    return set(urls)


def assert_slots_as_expected(h, urls, slots):
    """balancer-manager: the urls in rotation, and the rest of the slots
    placeholders, each disabled and named for a slot number of its own."""
    workers = h.balancer_members()
    names = [w["name"] for w in workers]
    held = placeholders(workers)
    assert len(workers) == slots, f"{len(workers)} workers, expected {slots}"
    assert set(urls) <= set(names), sorted(set(urls) - set(names))[:5]
    assert all(enabled(w) for w in workers if w["name"] in set(urls))
    assert len(held) == slots - len(urls), \
        f"{len(held)} placeholders, expected {slots - len(urls)}: {names[:5]}..."
    assert not [w["name"] for w in held if "Dis" not in w["flags"]], \
        f"a placeholder is not disabled: {[(w['name'], w['status']) for w in held][:5]}"
    numbers = [int(PLACEHOLDER_RE.fullmatch(w["name"]).group(1)) for w in held]
    assert len(set(numbers)) == len(numbers) and all(1 <= k <= slots for k in numbers), \
        sorted(numbers)


class BulkHeartbeat(Periodic):
    """Announces every url of self.urls (a set the test changes) every
    period seconds, as that many live backends would."""

    def __init__(self, announcer, urls, period=0.3):
        super().__init__(period)
        self.announcer = announcer
        self.lock = threading.Lock()
        self.urls = set(urls)

    def tick(self):
        with self.lock:
            urls = sorted(self.urls)
        for u in urls:
            self.announcer.announce(u)

    def change(self, add=(), remove=()):
        with self.lock:
            self.urls |= set(add)
            self.urls -= set(remove)


# ---- 1. 300 members in 400 reserved slots, no growth ------------------------------

SLOTS, MEMBERS = 400, 300


@pytest.fixture
def three_hundred(httpd_factory, workdir):
    """A proxy with slots=400 and no growth, 300 members in rotation:
    (httpd, Announcer, ManyBackends)."""
    h, ann = slots_proxy(httpd_factory, SLOTS)
    many = backends(workdir, MEMBERS, block=20)
    try:
        join_all(h, ann, many.urls, timeout=10)
        yield h, ann, many
    finally:
        many.stop()


def test_300_members_join_400_reserved_slots_without_growth_and_each_serves(three_hundred):
    h, _, many = three_hundred
    serve_each(h, many.names)
    assert_slots_as_expected(h, many.urls, SLOTS)
    # never resolved: no lookup of a placeholder's name, at any level
    assert not [l for l in h.error_log().splitlines()
                if "beacon.invalid" in l and re.search(r"AH00898|DNS|resolv", l)]


def test_no_view_counts_a_placeholder_as_a_member(three_hundred):
    h, _, many = three_hundred
    rx = receiver_json(h)
    urls = [m["url"] for m in rx["members"]]
    assert len(urls) == MEMBERS and set(urls) == set(many.urls), \
        f"{len(urls)} members in ?json: {[u for u in urls if u not in many.urls][:5]}"
    assert rx["records"] == MEMBERS, rx["records"]
    assert rx["capacity"] == 256 + SLOTS, rx["capacity"]  # 256 plus every slots=
    free = SLOTS - MEMBERS
    assert rx["slots"] == {"reserved": SLOTS, "free": free}, rx["slots"]
    status, page = h.get("/beacon-status")
    assert status == 200
    assert f"{MEMBERS} active</span>" in page, re.findall(r'<span class="mut">[^<]*', page)
    assert f"<dt>reserved slots</dt><dd>{MEMBERS} taken, {free} free</dd>" in page, \
        re.findall(r"<dt>reserved slots</dt>.{0,60}", page)
    assert "beacon.invalid" not in page
    status, metrics = h.get("/beacon-status?metrics")
    assert status == 200
    infos = [l for l in metrics.splitlines() if l.startswith("beacon_member_info{")]
    assert len(infos) == MEMBERS, len(infos)
    reserved = dict(re.findall(r'^beacon_reserved_slots\{.*state="(\w+)"\} (\d+)$',
                               metrics, re.M))
    assert reserved == {"taken": str(MEMBERS), "free": str(free)}, reserved
    assert "beacon.invalid" not in metrics
    status, auto = h.get("/server-status?auto")
    assert status == 200
    lines = dict(l.split(": ", 1) for l in auto.splitlines() if l.startswith("Beacon"))
    assert (lines["BeaconMembers"], lines["BeaconSlotsReserved"], lines["BeaconSlotsFree"]) \
        == (str(MEMBERS), str(SLOTS), str(free)), lines


@pytest.mark.parametrize("how", ["graceful", "stop and start"])
def test_a_restart_restores_all_300_into_reserved_slots(three_hundred, how):
    """Before any new announcement: every member is back in rotation in
    its own slot (balancer-manager lists the slots in order), the
    placeholders are the 100 others, and all 300 serve."""
    h, _, many = three_hundred
    before = [w["name"] for w in h.balancer_members()]
    mark = h.log_size()
    restart(h, how)
    h.wait_log(RESTORED_RE % MEMBERS, since=mark)
    assert_slots_as_expected(h, many.urls, SLOTS)
    after = [w["name"] for w in h.balancer_members()]
    moved = [(i, a, b) for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert not moved, f"{len(moved)} slots changed hands across the restart: {moved[:5]}"
    serve_each(h, many.names)
    # the children's views catch up with the restored table
    wait_for(lambda: json_members(h) == set(many.urls), 10,
             f"the {MEMBERS} restored members, and no placeholder, in ?json", interval=0.2)


def test_apache2_t_gives_no_growth_warning_to_a_balancer_with_slots(httpd_factory):
    """BCN00083 ("has no growth slots") is for balancers no member can
    join; reserved slots are room enough."""
    h = httpd_factory(tail_config=receiver_config(free_port(), balancer="cluster slots=4"))
    h.proxy_config = "<Proxy balancer://cluster>\n    ProxySet lbmethod=byrequests\n</Proxy>\n"
    rc, out = h.check_config()
    assert rc == 0, out
    assert "no growth slots" not in out, out


# ---- 2. the url past every slot -----------------------------------------------------

def no_slot_line(h, url, since):
    """The no-slot line for url, now declared an expected error."""
    m = h.wait_log(NO_SLOT_RE % re.escape(url), timeout=10, since=since)
    h.expect_errors(m.group(1))
    return m


def test_the_401st_url_is_refused_with_the_no_slot_line_and_the_400_serve(
        httpd_factory, workdir):
    h, ann = slots_proxy(httpd_factory, SLOTS)
    many = backends(workdir, SLOTS + 1, block=30)
    try:
        first, last = many.urls[:SLOTS], many.urls[SLOTS]
        join_all(h, ann, first, timeout=15)
        mark = h.log_size()
        ann.announce(last)
        no_slot_line(h, last, mark)
        assert last not in {w["name"] for w in h.balancer_members()}
        assert not placeholders(h.balancer_members())
        rx = receiver_json(h)
        assert rx["events"]["add_failed"] >= 1
        assert rx["slots"] == {"reserved": SLOTS, "free": 0}, rx["slots"]
        serve_each(h, many.names[:SLOTS])
    finally:
        many.stop()


# ---- 3. slots= and growth together ---------------------------------------------------

def test_placeholders_are_taken_before_growth_slots(httpd_factory, workdir):
    """slots=10 with growth=5: the first 10 urls rename placeholders (the
    balancer keeps 10 workers, growth untouched), the next 5 take growth,
    the 16th is refused; all 15 serve."""
    h, ann = slots_proxy(httpd_factory, 10, growth=5)
    many = backends(workdir, 16, block=40)
    try:
        join_all(h, ann, many.urls[:10], timeout=10)
        assert_slots_as_expected(h, many.urls[:10], 10)
        rx = receiver_json(h)
        assert rx["growth"]["used"] == 0 and rx["growth"]["free"] == 5, rx["growth"]
        assert rx["slots"] == {"reserved": 10, "free": 0}, rx["slots"]
        join_all(h, ann, many.urls[10:15], timeout=10)
        workers = h.balancer_members()
        assert len(workers) == 15 and not placeholders(workers), [w["name"] for w in workers]
        growth = receiver_json(h)["growth"]
        assert growth["used"] == 5 and growth["free"] == 0, growth
        mark = h.log_size()
        ann.announce(many.urls[15])
        no_slot_line(h, many.urls[15], mark)
        serve_each(h, many.names[:15])
    finally:
        many.stop()


# ---- 4. churn through reserved slots ---------------------------------------------------

CHURN_SLOTS, CHURN_WAVES = 20, 3


def test_urls_that_leave_free_their_reserved_slots_for_new_urls(httpd_factory, workdir):
    """20 slots, no growth, a 2 s lease: wave after wave, half the members
    leave (half of those say leaving, half fall silent) and as many new
    urls join through their slots; the balancer keeps 20 workers, and the
    20 of each wave serve."""
    h, ann = slots_proxy(httpd_factory, CHURN_SLOTS, timeout="2")
    half = CHURN_SLOTS // 2
    many = backends(workdir, CHURN_SLOTS + CHURN_WAVES * half, block=50)
    live = list(many.urls[:CHURN_SLOTS])
    fresh = iter(many.urls[CHURN_SLOTS:])
    try:
        with BulkHeartbeat(ann, live) as beat:
            join_all(h, ann, live, timeout=10)
            assert_slots_as_expected(h, live, CHURN_SLOTS)
            for wave in range(CHURN_WAVES):
                gone, stay = live[:half], live[half:]
                beat.change(remove=gone)
                for u in gone[:half // 2]:
                    ann.announce(u, state="leaving")
                wait_for(lambda: not members_in_rotation(h, gone), 15,
                         f"wave {wave}: {half} members out of rotation", interval=0.2)
                new = [next(fresh) for _ in range(half)]
                mark = h.log_size()
                beat.change(add=new)
                join_all(h, ann, new, timeout=40)
                live = stay + new
                workers = h.balancer_members()
                assert len(workers) == CHURN_SLOTS, [w["name"] for w in workers]
                assert members_in_rotation(h, live) == set(live)
                done = RECYCLED_RE.findall(h.error_log()[mark:])
                assert {n for _, n in done} == set(new), (wave, done)
                assert {o for o, _ in done} <= set(gone), (wave, done)
                serve_each(h, [many.names[many.urls.index(u)] for u in live])
    finally:
        many.stop()


# ---- 5. apache2 -t ------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["slots=0", "slots=5001", "slots=abc", "slots=",
                                    "slots=-1", "slots=4x", "slots=4 slots=4"])
def test_apache2_t_refuses_a_bad_slots_option(httpd_factory, option):
    h = httpd_factory(tail_config=receiver_config(free_port(), balancer=f"cluster {option}"))
    rc, out = h.check_config()
    assert rc != 0, f"{option}: apache2 -t passed:\n{out}"
    lines = [l for l in out.splitlines() if l.startswith("ProxyBeaconBalancer: slots=")]
    assert len(lines) == 1, out
    assert "1 to 5000" in lines[0] or "once" in lines[0], out


def many_balancers(httpd_factory, slots_each):
    """A receiver feeding one balancer per entry of slots_each (services
    s0, s1, ...), each reserving that many slots; not started."""
    h = httpd_factory()
    h.proxy_config = "".join(f"<Proxy balancer://b{i}>\n    ProxySet growth=1\n</Proxy>\n"
                             for i in range(len(slots_each)))
    h.proxypass_config = "ProxyPass /balancer-manager !\nProxyPass / balancer://b0/\n"
    h.tail_config = receiver_config(free_port(), balancer=None, extra="".join(
        f"ProxyBeaconBalancer b{i} service=s{i} secret=hex:{i + 1:032x} slots={n}\n"
        for i, n in enumerate(slots_each)))
    return h


def test_apache2_t_refuses_a_receiver_reserving_more_than_20000_slots(httpd_factory):
    h = many_balancers(httpd_factory, [5000, 5000, 5000, 5000, 1])
    rc, out = h.check_config()
    assert rc != 0, out
    lines = [l for l in out.splitlines() if "ProxyBeaconBalancer:" in l and "20000" in l]
    assert len(lines) == 1 and "20001" in lines[0], out


def test_apache2_t_takes_a_receiver_reserving_20000_slots(httpd_factory):
    rc, out = many_balancers(httpd_factory, [5000, 5000, 5000, 5000]).check_config()
    assert rc == 0, out


def test_health_checks_never_look_at_a_placeholder_and_start_when_a_slot_is_taken(
        httpd_factory, backend_factory):
    """ProxyBeaconMemberParams hc...: a placeholder is stopped as well as
    disabled, which mod_proxy_hcheck skips (a check would look up its
    .invalid name, fail, and flag it HcFl); the member that takes a slot is
    checked, and a failing check keeps it out while it announces."""
    udp = free_port()
    h = httpd_factory(growth=1, tail_config=receiver_config(
        udp, balancer="cluster slots=4", timeout="30",
        extra="ProxyBeaconMemberParams hcmethod=GET hcuri=/health hcinterval=1\n"))
    base = h.modules_config
    h.modules_config = lambda: base() + (
        "LoadModule proxy_hcheck_module /usr/lib/apache2/modules/mod_proxy_hcheck.so\n")
    start_receiver(h)
    ann = Announcer(udp)
    ill, well = backend_factory("ill"), backend_factory("well")
    with Heartbeat(ann, ill.url, period=0.3), Heartbeat(ann, well.url, period=0.3):
        wait_for(lambda: set(members_in_rotation(h, [ill.url, well.url])) ==
                 {ill.url, well.url}, 10, "both members in rotation")
        ill.set_healthy(False)

        def flags_of(name):
            return next(w["flags"] for w in h.balancer_members() if w["name"] == name)
        wait_for(lambda: "HcFl" in flags_of(ill.url), 15, "ill's check to fail")
        held = placeholders(h.balancer_members())
        assert len(held) == 2, [w["name"] for w in h.balancer_members()]
        # a checked placeholder fails as ill did, in as many intervals
        assert not [w["flags"] for w in held if "HcFl" in w["flags"]], held
        assert all("Stop" in w["flags"] for w in held), [w["flags"] for w in held]
        assert {h.get("/")[1] for _ in range(10)} == {"well"}


@pytest.mark.parametrize("url,canonical", [
    ("http://slot-1.beacon.invalid", None),
    ("https://Slot-7.Beacon.Invalid:8443", "https://slot-7.beacon.invalid:8443"),
    ("http://anything.beacon.invalid:8080", None),
    # the same names, spelled otherwise (issue 32, defect 7)
    ("http://slot-1.beacon.invalid.", None),
    ("http://SLOT-2.BEACON.INVALID.", "http://slot-2.beacon.invalid."),
    ("http://slot-1.beacon.invalid..:80", "http://slot-1.beacon.invalid.."),
])
def test_an_announced_url_named_like_a_placeholder_is_refused(httpd_factory,
                                                              backend_factory, url,
                                                              canonical):
    """A member named like a placeholder would look like a free reserved
    slot, and lose its slot to the next new url: no url whose host is under
    beacon.invalid, in any spelling, joins (nor can ProxyBeaconAllow open
    one: test_reach.c); it is dropped before the member table, and the
    slots stay free for real backends."""
    h, ann = slots_proxy(httpd_factory, slots=2)
    since = h.log_size()
    ann.announce(url)
    h.wait_log(r"BCN00020: \S+: dropped datagram from \S+: url not allowed %s: a "
               r"reserved slot's name \(beacon\.invalid\), never a member's$"
               % re.escape(canonical or url), since=since, timeout=10)
    real = backend_factory("real")
    ann.announce(real.url)
    wait_for(lambda: members_in_rotation(h, [real.url]) == {real.url}, 10, "real joins")
    workers = h.balancer_members()
    assert len(placeholders(workers)) == 1 and len(workers) == 2, \
        [(w["name"], w["flags"]) for w in workers]


def test_flags_an_admin_sets_on_a_free_placeholder_do_not_carry_to_its_taker(
        httpd_factory, backend_factory):
    """An operator who sets drain (N) or hot standby (H) on a free
    placeholder in balancer-manager sets it on no member: the url that takes
    the slot joins without it and serves its share (issue 32, defect 7: 0
    of 20 before)."""
    h, ann = slots_proxy(httpd_factory, slots=2)
    h.set_worker_status("cluster", "http://slot-1.beacon.invalid", N=1)
    h.set_worker_status("cluster", "http://slot-2.beacon.invalid", H=1)
    flags = {w["name"]: w["flags"] for w in placeholders(h.balancer_members())}
    assert "Drn" in flags["http://slot-1.beacon.invalid"], flags
    assert "Stby" in flags["http://slot-2.beacon.invalid"], flags
    one, two = backend_factory("one"), backend_factory("two")
    mark = h.log_size()
    for b in (one, two):
        ann.announce(b.url)
        wait_for(lambda: members_in_rotation(h, [b.url]) == {b.url}, 10, f"{b.url} joins")
    workers = {w["name"]: w for w in h.balancer_members()}
    assert not placeholders(workers.values()), list(workers)
    for b in (one, two):
        assert not {"Drn", "Stby", "Stop"} & set(workers[b.url]["flags"]), workers[b.url]
    answers = collections.Counter(h.get("/")[1] for _ in range(20))
    assert answers == {"one": 10, "two": 10}, answers
    h.wait_log(r"BCN00192: cleared flags 'N' an admin set on the free reserved slot "
               r"http://slot-1\.beacon\.invalid of balancer://cluster: %s takes it"
               % re.escape(one.url), since=mark)
    h.wait_log(r"BCN00192: cleared flags 'H' an admin set on the free reserved slot "
               r"http://slot-2\.beacon\.invalid of balancer://cluster: %s takes it"
               % re.escape(two.url), since=mark)
