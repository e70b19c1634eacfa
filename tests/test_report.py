"""The HTML report: escaped log text, every section, and a real headless Chromium rendering a non-blank page."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import shutil
import struct
import subprocess
import zlib

import pytest

from pipelines.report.render import render
from pipelines.report.text import duration

HOSTILE = "<script>alert(1)</script>"
T0 = dt.datetime(2026, 11, 20, 8, 0)


def _data(group: str) -> dict:
    later = T0 + dt.timedelta(seconds=30)
    return {
        "groups": [{"group_id": group, "rebalances": 1, "unavailable_ms": 3000, "last_cause": "gc_pause"}],
        "states": [{"group_id": group, "state": "PreparingRebalance", "generation": 1, "started_at": T0,
                    "ended_at": later},
                   {"group_id": group, "state": "Stable", "generation": 2, "started_at": later, "ended_at": None}],
        "rebalances": [{"rebalance_id": "r1", "group_id": group, "started_at": T0, "completed_at": later,
                        "duration_ms": 3000, "cause": "gc_pause", "cause_detail": "heartbeat_expiration",
                        "generation_after": 2, "trigger_member_id": f"m-{HOSTILE}", "incident_id": "r1"}],
        "hourly": [{"hour": T0, "cause": "gc_pause", "rebalances": 1}],
        "incidents": [{"incident_id": "r1", "group_id": group, "summary": f"1 rebalance(s) of {group}",
                       "rebalances": 1, "root_cause": "gc_pause",
                       "unavailable_ms": 3000, "started_at": T0, "ended_at": later}],
        "churn": [{"incident_id": "r1", "rebalance_id": "r1", "member": f"c1/{HOSTILE}", "revoked": 3,
                   "assigned": 0, "lost": 3, "kept": 0, "reprocessing_risk": "partitions_lost",
                   "exposed_partitions": ["t-0", "t-1", "t-2"], "first_event_at": T0}],
        "whatif": [{"incident_id": "r1", "rebalance_id": "r1", "change": "session.timeout.ms=20000",
                    "verdict": "avoided", "saved_ms": 3000, "delay_ms": None, "started_at": T0,
                    "detail": f"its JVM ({HOSTILE}) stopped 12.0 s in a GC pause"}],
        "evidence": [{"incident_id": "r1", "rebalance_id": "r1", "started_at": T0, "cause": "gc_pause",
                      "cause_detail": "heartbeat_expiration",
                      "evidence": [{"event_id": "e1", "explanation": f"JVM of {HOSTILE} paused 12 s"}]}],
        "advice": [{"group_id": group, "rule": "gc", "severity": "high", "observed": "1 expiry", "advice": "raise"}],
        "alerts": [{"opened_at": T0, "severity": "warning", "rule": "gc_expiry", "summary": f"{group} lost a member",
                    "delivered_to": ["jsonl"]}],
    }


def test_log_text_is_escaped_and_the_page_has_no_script():
    page = render(_data(HOSTILE))
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.lower()
    for section in ("timeline", "hourly", "lost", "incidents", "advice", "alerts"):
        assert f'id="{section}"' in page


def test_each_incident_has_its_own_section_with_its_timeline_churn_and_whatif():
    page = render(_data("orders"))
    assert '<a href="#incident-r1">' in page and '<section class="incident" id="incident-r1">' in page
    section = page[page.index('id="incident-r1"'):]
    assert '<svg class="zoomed"' in section and 'class="rebalance-bar"' in section
    assert "partitions_lost" in section and "t-0, t-1, t-2" in section
    assert "session.timeout.ms=20000" in section and "avoided" in section


def test_group_types_conversions_and_share_memberships_are_drawn():
    data = _data("orders")
    later = T0 + dt.timedelta(seconds=30)
    data["groups"].append({"group_id": "queue", "group_type": "share", "rebalances": 0, "unavailable_ms": 0,
                           "membership_changes": 3})
    data["states"] = [  # classic, then converted live to the consumer protocol
        {"group_id": "orders", "state": "Stable", "generation": 3, "protocol": "classic", "started_at": T0,
         "ended_at": later},
        {"group_id": "orders", "state": "Assigning", "generation": 4, "protocol": "consumer", "started_at": later,
         "ended_at": None}]
    data["memberships"] = [
        {"group_id": "queue", "member_id": "a", "joined_at": T0, "left_at": later, "end_reason": "left"},
        {"group_id": "queue", "member_id": "b", "joined_at": later, "left_at": None, "end_reason": "active"}]
    page = render(data)
    assert page.count('class="conversion"') == 1 and "converted to the consumer protocol" in page
    assert page.count('class="membership"') == 3  # two joins, one leave; no rebalance drawn for the share group
    assert page.count('class="rebalance"') == 1
    assert page.count('class="group-type"') == 2 and "<title>share group</title>" in page
    assert "share membership changes" in page


def _png_is_blank(png: bytes) -> bool:
    """Decode an 8-bit RGB(A) PNG (what Chromium writes) and tell whether every pixel is the same."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, _, depth, colour = struct.unpack(">IIBB", chunk[:10])
            channels = {2: 3, 6: 4}[colour]
            assert depth == 8
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + width * channels
    pixels = {raw[i + 1:i + stride] for i in range(0, len(raw), stride)}
    # Filtered rows that are all alike (and zero after the filter byte) mean one colour everywhere.
    return len(pixels) <= 1


def _estate() -> dict:
    """A period of three groups with long member ids and an incident of several rebalances, each moving partitions
    between six members: what makes a page overflow on a phone or bury its findings."""
    data = _data("orders")
    data["groups"] = [{"group_id": g, "rebalances": n, "unavailable_ms": ms, "last_cause": "membership_change",
                       "group_type": "consumer"} for g, n, ms in (("payments-ledger", 12, 48482),
                                                                   ("orders", 1, 3000), ("shipping-events", 2, 1500))]
    members = [f"payments-svc-{i}/consumer-payments-ledger-{i}-66836886-a260-4d0b-bb45-145c1a81682c" for i in range(6)]
    storm = []
    for n in range(12):
        at = T0 + dt.timedelta(minutes=20, seconds=10 * n)
        storm.append({"rebalance_id": f"s{n}", "group_id": "payments-ledger", "started_at": at,
                      "completed_at": at + dt.timedelta(seconds=3), "duration_ms": 3000, "cause": "membership_change",
                      "cause_detail": "member_leave", "generation_after": n + 1, "trigger_member_id": members[0],
                      "incident_id": "s0"})
    data["rebalances"] += storm
    data["states"] += [{"group_id": "payments-ledger", "state": "Stable", "generation": 1, "started_at": T0,
                        "ended_at": None}]
    data["incidents"].insert(0, {"incident_id": "s0", "group_id": "payments-ledger", "rebalances": 12,
                                 "unavailable_ms": 36000, "root_cause": "membership_change",
                                 "summary": "12 rebalance(s) of payments-ledger in 113 s",
                                 "started_at": storm[0]["started_at"], "ended_at": storm[-1]["completed_at"]})
    data["churn"] += [{"incident_id": "s0", "rebalance_id": r["rebalance_id"], "member": m, "revoked": 2,
                       "assigned": 2, "lost": 0, "kept": 0, "reprocessing_risk": "none", "exposed_partitions": [],
                       "first_event_at": r["started_at"]} for r in storm for m in members]
    data["evidence"] += [{"incident_id": "s0", "rebalance_id": r["rebalance_id"], "started_at": r["started_at"],
                          "cause": r["cause"], "cause_detail": r["cause_detail"],
                          "evidence": [{"event_id": "e" * 24, "explanation": f"Removing member {members[0]} "
                                        "on LeaveGroup; client reason: the consumer is being closed"}]}
                         for r in storm]
    data["estate"] = [{"estate_incident_id": "x1", "root_kind": "coordinator_stall", "root_instance": "broker-2",
                       "started_at": T0 + dt.timedelta(minutes=20), "ended_at": T0 + dt.timedelta(minutes=21),
                       "groups": ["payments-ledger", "orders"], "groups_unaffected": ["shipping-events"],
                       "groups_unaffected_why": [{"group_id": "shipping-events", "why": "no member to lose: the "
                                                  "group was Empty at the time"}],
                       "unavailable_group_ms": 61000, "cause_rule": "estate_coordinator_stall",
                       "summary": "broker-2 expired members of 2 groups within 2 s"}]
    data["hourly"] += [{"hour": T0 + dt.timedelta(hours=2), "cause": "membership_change", "rebalances": 12}]
    data["advice"].append({"group_id": "payments-ledger", "rule": "static_membership", "severity": "medium",
                           "observed": "13 rebalances from members joining or leaving",
                           "configured": "group.instance.id unset (6 of 6 members)",
                           "advice": "use static membership (group.instance.id, KIP-345) so restarts within "
                                     "session.timeout.ms do not rebalance", "whatif_change": "group.instance.id=static",
                           "avoided_rebalances": 12, "saved_ms": 35225})
    return data


def test_the_estate_section_names_the_root_the_groups_it_rebalanced_and_those_it_spared():
    page = render(_estate())
    section = page[page.index('id="estate"'):page.index('id="incidents"')]
    assert "coordinator_stall" in section and "broker-2" in section and "1 min 1 s" in section
    assert "payments-ledger, orders" in section
    assert "shipping-events (no member to lose: the group was Empty at the time)" in section
    assert "broker-2 expired members of 2 groups within 2 s" in section
    assert "None." in render(_data("orders")).split('id="estate"')[1].split('id="incidents"')[0]


def test_durations_read_as_seconds_and_minutes_never_raw_milliseconds():
    assert [duration(ms) for ms in (850, 48482, 59990, 182000, 3600000, 7500000, None)] == [
        "850 ms", "48.5 s", "1 min", "3 min 2 s", "1 h", "2 h 5 min", "-"]
    page = render(_estate())
    assert "(ms)" not in page and "48482" not in page and "35225" not in page
    assert "48.5 s" in page and "35.2 s of rebalancing" in page
    assert "12 rebalances of payments-ledger in 1 min 53 s, 36.0 s without consuming" in page


def test_the_page_opens_with_the_worst_groups_and_incidents_and_what_to_change():
    page = render(_estate())
    top = page[page.index('id="summary"'):page.index('id="timeline"')]
    assert top.index("payments-ledger") < top.index("orders")  # the group that lost the most first
    assert '<a href="#incident-s0">12 rebalances of payments-ledger' in top
    assert top.index("(high)") < top.index("(medium)") and "avoids 12 rebalances (35.2 s of rebalancing)" in top


def test_partition_moves_are_summed_up_per_rebalance_with_every_member_folded_away():
    page = render(_estate())
    section = page[page.index('id="incident-s0"'):page.index('id="incident-r1"')]
    summary = section[section.index('class="churn-summary"'):section.index("<details><summary>every member")]
    assert summary.count("<tr>") == 1 + 12  # a header and one row per rebalance, not one per member
    assert summary.count("12 partitions from 6 members") == 12 and "payments-svc-0" not in summary
    folded = section[section.index("<details><summary>every member (72 rows)"):]
    assert folded.count("payments-svc-0/") == 12


def test_every_chart_has_a_time_axis_with_readable_ticks():
    page = render(_estate())
    assert page.count('class="time-axis"') == 2 + 2  # the timeline, the hourly chart, each incident's zoom
    hourly_chart = page[page.index('<svg class="hourly"'):]
    ticks = re.findall(r'class="tick">([^<]+)<', hourly_chart[:hourly_chart.index("</svg>")])
    assert "08:00" in ticks and "10:00" in ticks  # the quiet hour between them keeps its place on the axis
    zoom = page[page.index('<svg class="zoomed"'):]
    assert re.search(r'class="tick">08:2\d:\d\d<', zoom[:zoom.index("</svg>")])


# Measures the page as Chromium laid it out: text boxes narrower than their text, anything past the right edge of
# the window (the charts scroll sideways in their own box), and where each in-page link lands when clicked.
MEASURE = """<script>
window.addEventListener('load', () => setTimeout(async () => {
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '')
    + ' "' + (e.textContent || '').trim().slice(0, 60) + '"';
  const out = {width: innerWidth, page: document.documentElement.scrollWidth, overflowing: [], past: [], links: []};
  for (const e of document.body.querySelectorAll('*')) {
    const style = getComputedStyle(e);
    if (e.closest('.chart') || style.display === 'inline' || style.display === 'none') continue;
    if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1) out.overflowing.push(name(e));
    const box = e.getBoundingClientRect();
    if (box.width > 0 && box.right > innerWidth + 1) out.past.push(name(e));
  }
  const bottom = document.documentElement.scrollHeight - innerHeight;
  for (const a of document.querySelectorAll('a[href^="#"]')) {
    scrollTo(0, 0);
    const id = decodeURIComponent(a.getAttribute('href').slice(1));
    const target = document.getElementById(id);
    a.click();
    await new Promise(r => setTimeout(r, 20));
    const top = target ? target.getBoundingClientRect().top : null;
    out.links.push({href: id, exists: !!target, top: top, scrolled: scrollY, at_bottom: scrollY >= bottom - 1});
  }
  parent.postMessage(JSON.stringify(out), '*');
}, 50));
</script>"""
# Headless Chromium lays a window out at least 500 px wide: the page is shown in a frame of the width under test,
# and the frame's measurements come out through the window's DOM.
FRAME = """<!DOCTYPE html><html><body style="margin:0"><iframe src="{src}" style="border:0;width:{width}px;
height:{height}px"></iframe><pre id="measured"></pre><script>
window.addEventListener('message', e => {{ document.getElementById('measured').textContent = e.data; }});
</script></body></html>"""


def _chromium(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]


@pytest.mark.browser
def test_chromium_renders_the_report(tmp_path):
    chromium = _chromium(tmp_path)
    page = tmp_path / "report.html"
    page.write_text(render(_data(HOSTILE)), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run([*chromium, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert not _png_is_blank(shot.read_bytes())
    dom = subprocess.run([*chromium, "--dump-dom", page.as_uri()], check=True, capture_output=True,
                         timeout=120, text=True).stdout
    assert 'id="timeline"' in dom and 'class="rebalance"' in dom and "<details" in dom
    assert "<script>alert(1)</script>" not in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_the_report_fits_the_screen_and_its_links_land_on_their_sections(tmp_path, width):
    chromium = _chromium(tmp_path)
    page = render(_estate())
    (tmp_path / "report.html").write_text(page, encoding="utf-8")
    (tmp_path / "shown.html").write_text(FRAME.format(src="report.html", width=width, height=3000))
    shot = tmp_path / f"report-{width}px.png"
    subprocess.run([*chromium, f"--screenshot={shot}", f"--window-size={width},3000",
                    (tmp_path / "shown.html").as_uri()], check=True, capture_output=True, timeout=120)
    assert not _png_is_blank(shot.read_bytes())
    print(f"screenshot: {shot}")
    # The page measured is the same page with a script added (the report's own policy forbids scripts).
    (tmp_path / "measured.html").write_text(
        page.replace('<meta http-equiv="Content-Security-Policy"', '<meta name="policy"')
        .replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    frame = tmp_path / "frame.html"
    frame.write_text(FRAME.format(src="measured.html", width=width, height=900))
    dom = subprocess.run([*chromium, "--window-size=1300,1000", "--virtual-time-budget=10000", "--dump-dom",
                          frame.as_uri()], check=True, capture_output=True, timeout=120, text=True).stdout
    found = re.search(r'<pre id="measured">(.+?)</pre>', dom, re.S)
    assert found, "the measuring script did not finish"
    result = json.loads(html.unescape(found.group(1)))
    assert result["width"] == width
    assert result["page"] <= width, "the page is wider than the window"
    assert result["overflowing"] == [] and result["past"] == []
    incidents = [link for link in result["links"] if link["href"].startswith("incident-")]
    assert {link["href"] for link in incidents} == {"incident-s0", "incident-r1"}
    for link in result["links"]:
        assert link["exists"], link
        # The section's top is at the top of the window, or the page is scrolled as far as it goes.
        assert abs(link["top"]) <= 1 or (link["at_bottom"] and 0 <= link["top"] < 900), link


def test_the_report_keeps_only_the_group_types_asked_for(spark, tmp_path):
    from pipelines.report.data import collect
    from pipelines.storage import lake, writes
    from schemas.gold import GOLD_MEMBER_SESSIONS
    from schemas.tables import GOLD_REBALANCES
    from tests.conftest import make_config

    cfg = make_config(tmp_path)
    lake.ensure_tables(spark, cfg)
    rows = [{"rebalance_id": f"r-{g}", "group_id": g, "protocol": "classic", "started_at": T0, "outcome": "open",
             "cause": "membership_change", "cause_confidence": 0.5, "group_type": kind}
            for g, kind in (("orders", "consumer"), ("wordcount", "streams"), ("old", None))]
    writes.append(spark.createDataFrame([tuple(r.get(f.name) for f in GOLD_REBALANCES.fields) for r in rows],
                                    GOLD_REBALANCES), cfg, "gold_rebalances")
    # A share group has member sessions and never a rebalance.
    sessions = [{"session_id": f"s-{m}", "group_id": "queue", "member_id": m, "joined_at": T0, "left_at": left,
                 "end_reason": "left" if left else "active", "rebalances": 0, "group_type": "share"}
                for m, left in (("a", T0 + dt.timedelta(seconds=5)), ("b", None))]
    writes.append(spark.createDataFrame([tuple(r.get(f.name) for f in GOLD_MEMBER_SESSIONS.fields) for r in sessions],
                                    GOLD_MEMBER_SESSIONS), cfg, "gold_member_sessions")
    everything = collect(spark, cfg)
    assert sorted((g["group_id"], g["group_type"]) for g in everything["groups"]) == [
        ("old", "consumer"), ("orders", "consumer"), ("queue", "share"),
        ("wordcount", "streams")]  # rows before the column: consumer
    queue = next(g for g in everything["groups"] if g["group_id"] == "queue")
    assert (queue["rebalances"], queue["membership_changes"]) == (0, 3)
    streams = collect(spark, cfg, group_types=("streams",))
    assert [g["group_id"] for g in streams["groups"]] == ["wordcount"]
    assert [r["group_id"] for r in streams["rebalances"]] == ["wordcount"]
    assert streams["memberships"] == []
    assert "<th>type</th>" in render(streams)
    share = collect(spark, cfg, group_types=("share",))
    assert [g["group_id"] for g in share["groups"]] == ["queue"] and share["rebalances"] == []
    assert sorted(m["member_id"] for m in share["memberships"]) == ["a", "b"]


def test_summaries_in_the_tables_say_durations_as_the_report_does(spark):
    from pipelines.gold.spoken import spoken_duration
    from pipelines.report.text import duration

    values = [None, 0.0, 850.0, 999.4, 1000.0, 48_482.0, 59_949.0, 59_950.0, 60_000.0, 182_000.0, 3_599_400.0,
              3_600_000.0, 7_500_000.0, 7_200_400.0]
    frame = spark.createDataFrame([(v,) for v in values], "ms double")
    spoken = [r.text for r in frame.select(spoken_duration(frame.ms).alias("text")).collect()]
    assert spoken == [duration(v) for v in values]
