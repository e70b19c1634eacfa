"""The HTML report: escaped log text, every section, and a real headless Chromium rendering a non-blank page."""

from __future__ import annotations

import datetime as dt
import shutil
import struct
import subprocess
import zlib

import pytest

from pipelines.report.render import render

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


@pytest.mark.browser
def test_chromium_renders_the_report(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    page = tmp_path / "report.html"
    page.write_text(render(_data(HOSTILE)), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert not _png_is_blank(shot.read_bytes())
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], check=True, capture_output=True,
                         timeout=120, text=True).stdout
    assert 'id="timeline"' in dom and 'class="rebalance"' in dom and "<details" in dom
    assert "<script>alert(1)</script>" not in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom


def test_the_report_keeps_only_the_group_types_asked_for(spark, tmp_path):
    from pipelines import io
    from pipelines.report.data import collect
    from schemas.gold import GOLD_MEMBER_SESSIONS
    from schemas.tables import GOLD_REBALANCES
    from tests.conftest import make_config

    cfg = make_config(tmp_path)
    io.ensure_tables(spark, cfg)
    rows = [{"rebalance_id": f"r-{g}", "group_id": g, "protocol": "classic", "started_at": T0, "outcome": "open",
             "cause": "membership_change", "cause_confidence": 0.5, "group_type": kind}
            for g, kind in (("orders", "consumer"), ("wordcount", "streams"), ("old", None))]
    io.append(spark.createDataFrame([tuple(r.get(f.name) for f in GOLD_REBALANCES.fields) for r in rows],
                                    GOLD_REBALANCES), cfg, "gold_rebalances")
    # A share group has member sessions and never a rebalance.
    sessions = [{"session_id": f"s-{m}", "group_id": "queue", "member_id": m, "joined_at": T0, "left_at": left,
                 "end_reason": "left" if left else "active", "rebalances": 0, "group_type": "share"}
                for m, left in (("a", T0 + dt.timedelta(seconds=5)), ("b", None))]
    io.append(spark.createDataFrame([tuple(r.get(f.name) for f in GOLD_MEMBER_SESSIONS.fields) for r in sessions],
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
