"""The real-Kafka lab corpus (tests/data/kafka-lab/<version>/, made by `python -m lab run --commit-corpus`).

Default tier: every group-related line the real brokers and clients printed becomes an event (or is a listed,
known exception in unparsed-wordings.tsv), every truth row's generation is one the brokers logged, and the pipeline
(its batch path, the streaming run's oracle) finds every true rebalance, invents none and gets the cause right for at
least 95% of them on each version.
Tier `kafka`: run the lab live for one version (short scenario set) and check what it produced.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from lab.corpus import RECORD_START, is_group_related
from pipelines.alerts.rules import storm_alerts
from pipelines.flow.batch import batch_tables
from pipelines.gold.placement import gold_events
from pipelines.gold.rebalances import orphan_lines, rules_from, timeline_input, timeline_records
from pipelines.gold.state_order import state_time_order
from pipelines.gold.timeline import Timeline
from pipelines.gold.whatif import parse_change
from pipelines.quality.derived import with_transition_check
from pipelines.settings.config import AlertSettings, load_config
from pipelines.storage import inputs
from simulator.evaluate import accuracy, match_truth
from tests.conftest import silver_batch
from tests.explaining import check_explained

CORPUS = Path(__file__).parent / "data" / "kafka-lab"
VERSIONS = sorted(p.name for p in CORPUS.glob("*") if (p / "truth" / "rebalances.jsonl").is_file())
EXCEPTIONS = CORPUS / "unparsed-wordings.tsv"
EPOCH = re.compile(r"\[GroupId (\S+)\](?:\[MemberId \S+\])? Bumped (?:streams )?group epoch to (\d+)")
TARGET = re.compile(r"\[GroupId (\S+)\] Computed a new target assignment for epoch (\d+)")
# The partitions a member's lines move: Java's listener lines (their lists) and librdkafka's counts.
LISTED_MOVES = re.compile(r"(Revoke previously assigned partitions|Adding newly assigned partitions:|"
                          r"Lost previously assigned partitions) \[?([^\]\n(]*?)\]?(?: \(|$)", re.MULTILINE)
COUNTED_MOVES = re.compile(r"delegating (?:incremental )?(assign|revoke) of (\d+) partition\(s\)|"
                           r"current assignment of (\d+) partition\(s\) (lost)")
MOVE_KIND = {"Revoke previously assigned partitions": "revoked", "Adding newly assigned partitions:": "assigned",
             "Lost previously assigned partitions": "lost", "assign": "assigned", "revoke": "revoked", "lost": "lost"}
# Scenarios `whatif_gc` and `whatif_restart`: each group's history, then the same again with the advised setting.
WHATIF_PAIRS = {"lab-wi-gc": ("lab-wi-gc-advised", "session.timeout.ms"),
                "lab-wi-restart": ("lab-wi-restart-static", "group.instance.id")}
CONVERTED_GROUP = "lab-convert"  # scenario `conversion`: classic -> consumer -> classic, live (4.x)
SHARE_GROUP = "lab-share"  # scenario `sh_churn`: share consumers come and go (4.2+)


def known_exceptions() -> list[tuple[re.Pattern[str], str]]:
    """(regex, versions) rows of the wordings the parser does not handle yet, each a known and listed gap."""
    rows = []
    for line in EXCEPTIONS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            pattern, versions, *_ = line.split("\t")
            rows.append((re.compile(pattern), versions))
    return rows


def group_lines(landing: Path) -> Iterator[tuple[str, int, str]]:
    """(instance/file, line number, text) of every group-related record's first line under `landing`."""
    for path in sorted(landing.rglob("*")):
        if not path.is_file() or path.name.startswith("gc"):
            continue
        rel = f"{path.parent.name}/{path.name}"
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if RECORD_START.match(line) and is_group_related(line):
                yield rel, no, line


def parse_landing(spark, landing: Path) -> list:
    """Every bronze record of the broker and client logs parsed by the pipeline: file, line_no, template, event."""
    paths = sorted(p for p in landing.rglob("*") if p.is_file() and not p.name.startswith("gc"))
    staged = silver_batch(inputs.read_files(spark, paths), load_config())
    try:
        parts = F.split("source_file", "/")
        rel = F.concat_ws("/", F.element_at(parts, -2), F.element_at(parts, -1))
        return staged.parsed.select(
            rel.alias("file"), "line_no", "template_id", "event_type", "disposition", "group_id", "generation",
            "source_kind",
        ).collect()
    finally:
        staged.unpersist()


def logged_moves(landing: Path) -> Counter:
    """(process folder, revoked | assigned | lost) -> partitions its client lines move, read straight from the logs."""
    moved: Counter = Counter()
    for path in sorted(landing.glob("*/*")):
        if path.name.startswith("gc") or path.parent.name.startswith("broker"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in LISTED_MOVES.finditer(text):
            moved[(path.parent.name, MOVE_KIND[m.group(1)])] += len([p for p in m.group(2).split(",") if p.strip()])
        lost = False
        for m in COUNTED_MOVES.finditer(text):
            kind = MOVE_KIND[m.group(1) or m.group(4)]
            # librdkafka delivers a lost assignment as a revocation: the loss, counted once.
            if not (kind == "revoked" and lost):
                moved[(path.parent.name, kind)] += int(m.group(2) or m.group(3))
            lost = kind == "lost" or (lost and kind == "revoked")
    return +moved


def replayed_groups(tables, groups: list[str], cfg, *, trace: bool = False,
                    orphans: bool = False) -> dict[str, Timeline]:
    """Each of `groups`' timelines, replayed from the batch tables as the pipeline replays them (with `orphans`,
    also with the group-less client warnings the build routes to each, as `rebalance explain` replays it); the
    lines are placed and read once for all of them."""
    rules = rules_from(cfg.thresholds)
    silver = gold_events(tables["silver_events"])
    events = silver.filter(F.col("group_id").isin(groups))
    if orphans:
        events = events.unionByName(orphan_lines(silver))
    inputs = timeline_input(events, tables["silver_gc_pauses"], min_pause_ms=rules.gc_pause_min_ms)
    rows = inputs.filter(F.col("group_id").isin(groups)).toPandas()
    return {g: Timeline(g, timeline_records(rows[rows["group_id"] == g]), rules, trace=trace) for g in groups}


def replayed(tables, group: str, cfg, *, trace: bool = False, orphans: bool = False) -> Timeline:
    """One group's timeline (`replayed_groups`)."""
    return replayed_groups(tables, [group], cfg, trace=trace, orphans=orphans)[group]


def _kind(rebalance: dict) -> str:
    """A rebalance as the what-if's comparison sees it: an expiry, a leave, a join, or its cause."""
    if rebalance["cause"] == "session_timeout":
        return "expiry"
    return {"member_leave": "leave", "member_join": "join"}.get(rebalance["cause_detail"], rebalance["cause"])


def check_whatif(tables, cfg, original: str, advised: str, setting: str) -> dict[str, set[str]]:
    """The what-if of `original` under the setting its `advised` run used, against what real Kafka did there: the
    kinds of rebalance it predicts (those not avoided; a `later` one as the expiry that replaces a leave) are the
    kinds the advised run had, so every avoided kind is absent."""
    advised_timeline = replayed(tables, advised, cfg)
    if setting == "session.timeout.ms":  # the GC member's, as its ConsumerConfig logged it
        values = {s["session.timeout.ms"] for i, s in advised_timeline.ctx.settings.items() if i.endswith("-c2")}
        assert len(values) == 1, values
        value = values.pop()
    else:
        value = "static"
    original_timeline = replayed(tables, original, cfg)
    rows = original_timeline.what_if().weigh(parse_change(f"{setting}={value}"))
    by_rebalance = {r["rebalance_id"]: r for r in original_timeline.rebalances}
    avoided = {_kind(by_rebalance[r["rebalance_id"]]) for r in rows if r["verdict"] == "avoided"}
    predicted = {"expiry" if r["verdict"] == "later" else _kind(by_rebalance[r["rebalance_id"]])
                 for r in rows if r["verdict"] != "avoided"}
    happened = {_kind(r) for r in advised_timeline.rebalances}
    assert avoided, rows
    assert predicted == happened, (predicted, happened, rows)
    return {"avoided": avoided, "predicted": predicted, "happened": happened}


def check_corpus(spark, root: Path) -> None:
    """Both corpus properties: group lines are parsed or listed, truth generations are in the broker's events."""
    landing = root / "landing"
    rows = parse_landing(spark, landing)
    parsed = {(r["file"], r["line_no"]): r for r in rows}
    exceptions = known_exceptions()
    missing = []
    used: set[str] = set()
    for file, no, text in group_lines(landing):
        row = parsed.get((file, no))
        if row is not None and row["template_id"] is not None:
            continue
        listed = [p.pattern for p, _ in exceptions if p.search(text)]
        if listed:
            used.update(listed)
            continue
        missing.append(f"{file}:{no}: {text[:300]}")
    assert not missing, f"{len(missing)} group-related lines neither parsed nor listed in {EXCEPTIONS.name}:\n" + \
        "\n".join(missing[:25])
    # A listed gap that no longer occurs in a version it names would hide the next regression: delete its row.
    stale = [p.pattern for p, versions in exceptions if root.name in versions.split(", ") and p.pattern not in used]
    assert not stale, f"rows of {EXCEPTIONS.name} that no unparsed line of {root.name} matches any more: {stale}"

    logged = {(r["group_id"], r["generation"]) for r in rows
              if r["event_type"] in ("group_stabilized", "group_emptied") and r["generation"] is not None}
    epochs = set()
    for server_log in landing.glob("broker-*/server.log"):
        text = server_log.read_text(encoding="utf-8")
        epochs |= {(m.group(1), int(m.group(2))) for m in EPOCH.finditer(text)}
        epochs |= {(m.group(1), int(m.group(2))) for m in TARGET.finditer(text)}
    truth = [json.loads(line) for line in (root / "truth" / "rebalances.jsonl").read_text().splitlines() if line]
    assert truth, f"{root} has no truth rows"
    absent = []
    for t in truth:
        if t.get("group_epoch") is not None:
            if (t["group_id"], t["group_epoch"]) not in epochs:
                absent.append(t)
        elif (t["group_id"], t["generation_after"]) not in logged:
            absent.append(t)
    assert not absent, f"truth rows whose generation no broker event shows: {absent[:10]}"


@pytest.mark.skipif(not VERSIONS, reason="no lab corpus committed under tests/data/kafka-lab")
@pytest.mark.parametrize("version", VERSIONS)
def test_lab_corpus_is_parsed_and_truth_is_confirmed(spark, version):
    check_corpus(spark, CORPUS / version)


def check_estate_incidents(found: list[dict], truth_file: Path) -> None:
    """Every true estate incident found (root kind and set of groups), at its root, with its unaffected groups in
    the blast radius; none invented (a corpus without the truth file has none)."""
    truth = [json.loads(line) for line in truth_file.read_text().splitlines()] if truth_file.exists() else []
    key = {(r["root_kind"], tuple(sorted(r["groups"]))): r for r in found}
    for t in truth:
        row = key.get((t["root_kind"], tuple(sorted(t["groups"]))))
        assert row is not None, (t, [(r["root_kind"], r["groups"], r["cause_rule"]) for r in found])
        assert row["root_instance"] == t["root_instance"], (row, t)
        assert set(t.get("groups_unaffected", [])) <= set(row["groups_unaffected"] or []), (row, t)
    for row in found:  # each spared group says why, from its own rows
        assert [w["group_id"] for w in row["groups_unaffected_why"] or []] == (row["groups_unaffected"] or []), row
        assert all(w["why"] for w in row["groups_unaffected_why"] or []), row
    invented = set(key) - {(t["root_kind"], tuple(sorted(t["groups"]))) for t in truth}
    assert not invented, [(key[k]["summary"], key[k]["cause_rule"]) for k in sorted(invented)]


@pytest.mark.skipif(not VERSIONS, reason="no lab corpus committed under tests/data/kafka-lab")
@pytest.mark.parametrize("version", VERSIONS)
def test_lab_causes_match_the_truth(spark, tmp_path, version):
    root = CORPUS / version
    cfg = load_config(None, {"landing": root / "landing", "lakehouse": tmp_path / "lakehouse"})
    with batch_tables(spark, cfg) as tables:
        truth = spark.read.json(str(root / "truth" / "rebalances.jsonl"))
        matched = match_truth(tables["gold_rebalances"], truth).cache()
        result = accuracy(matched)
        kind = truth.select("group_id", F.coalesce("client_kind", F.lit("java")).alias("kind")).distinct()
        per_kind = {r.kind: accuracy(matched.join(kind, "group_id").filter(F.col("kind") == r.kind))
                    for r in kind.select("kind").distinct().collect()}
        storms = storm_alerts(tables["gold_rebalances"], settings=AlertSettings()).select("group_id").collect()
        states = with_transition_check(tables["gold_group_states"]).cache()
        illegal = states.filter(~F.col("legal_transition")).select("group_id", "previous_state", "state").collect()
        kinds = {r.state for r in states.filter(F.col("group_id") == "lab-kip848").select("state").collect()}
        converted = states.filter(F.col("group_id") == CONVERTED_GROUP).orderBy(*state_time_order()).collect()
        share_sessions = tables["gold_member_sessions"].filter(F.col("group_id") == SHARE_GROUP).collect()
        churn = tables["gold_partition_churn"].collect()
        static = {r.instance for r in tables["gold_member_sessions"].filter(F.col("group_instance_id").isNotNull())
                  .select("instance").distinct().collect()}
        groups = {r.group_id for r in truth.select("group_id").distinct().collect()}
        for original, (advised, setting) in WHATIF_PAIRS.items():
            if {original, advised} <= groups:
                check_whatif(tables, cfg, original, advised, setting)
        rebalance_ids = {r.rebalance_id for r in tables["gold_rebalances"].select("rebalance_id").collect()}
        # `rebalance explain` accounts for every rebalance: one deciding rule, the stored one, on landed lines.
        stored = {r.rebalance_id: r.asDict() for r in
                  tables["gold_rebalances"].select("rebalance_id", "cause", "cause_rule", "group_id").collect()}
        timelines = replayed_groups(tables, sorted({r["group_id"] for r in stored.values()}), cfg, trace=True,
                                    orphans=True)
        explained = sum(check_explained(t, stored, cfg.thresholds) for t in timelines.values())
        estates = [r.asDict() for r in tables["gold_estate_incidents"].collect()]
        states.unpersist()
        matched.unpersist()
    assert explained >= len(stored)
    check_estate_incidents(estates, root / "truth" / "estate_incidents.jsonl")
    assert result.found == result.truth, result.confusion
    assert result.invented == 0, result.confusion
    assert result.cause_accuracy >= 0.95, (result.line(), result.confusion)
    for name, by_kind in per_kind.items():
        assert by_kind.cause_accuracy >= 0.95, (name, by_kind.line(), by_kind.confusion)
    # A Kafka Streams scale-out: two joins, the probing rebalance with its follow-up, a kill and a shutdown within
    # two minutes; the planned probing rebalances must not make it a storm.
    if "lab-st-scale" in {r.group_id for r in truth.select("group_id").distinct().collect()}:
        assert "lab-st-scale" not in {r.group_id for r in storms}
    assert illegal == []
    broker_text = "".join(p.read_text(encoding="utf-8") for p in (root / "landing").glob("broker-*/server.log"))
    if f"[GroupId {CONVERTED_GROUP}] Converted the" in broker_text:
        # classic -> consumer -> classic, live: one timeline whose states carry the protocol of the moment, the
        # generations counting on through both (the consumer group's epoch continues the classic generation).
        protocols = [s.protocol for s in converted]
        assert [p for i, p in enumerate(protocols) if i == 0 or p != protocols[i - 1]] == [
            "classic", "consumer", "classic"], protocols
        generations = [s.generation for s in converted if s.generation is not None]
        assert generations == sorted(generations), generations
    joins = broker_text.count(f"[GroupId {SHARE_GROUP}] Member ")  # joins and leaves of the share group
    if joins:
        # Share-group churn: no rebalance (the match above counts any as invented), no storm, and every member's
        # comings and goings as sessions of a share group.
        assert SHARE_GROUP not in {r.group_id for r in storms}
        joined = len(re.findall(rf"\[GroupId {SHARE_GROUP}\] Member \S+ joins the share group", broker_text))
        assert len(share_sessions) == joined >= 3
        assert {(r.group_type, r.rebalances) for r in share_sessions} == {("share", 0)}
        assert {r.end_reason for r in share_sessions} <= {"left", "expired"}
        assert "expired" in {r.end_reason for r in share_sessions}  # the member killed with SIGKILL
    # Partition churn: what each process's rows say it revoked, received and lost is what its lines say, partition
    # for partition, and every row that names a rebalance names one of the group's.
    counted: Counter = Counter()
    for row in churn:
        for kind in ("revoked", "assigned", "lost"):
            counted[(row.instance, kind)] += row[kind]
    assert +counted == logged_moves(root / "landing")
    assert {r.rebalance_id for r in churn} - {None} <= rebalance_ids
    # A static member restarting within its session timeout gets its partitions back with no rebalance (KIP-345):
    # its revoke and assign cycles belong to none. Every other member's cycles are tied to a rebalance.
    dynamic = [r for r in churn if r.instance not in static]
    attributed = [r for r in dynamic if r.rebalance_id is not None]
    assert len(attributed) >= 0.95 * len(dynamic), [(r.member, r.first_event_at) for r in dynamic
                                                     if not r.rebalance_id]
    # KIP-848 groups (4.x) have their own states; classic groups of the same broker keep the classic machine.
    assert kinds >= ({"Assigning", "Stable"} if version.startswith("4.") else set())


def test_lab_corpus_covers_every_cause():
    causes = set()
    for version in VERSIONS:
        for line in (CORPUS / version / "truth" / "rebalances.jsonl").read_text().splitlines():
            causes.add(json.loads(line)["cause"])
    if VERSIONS:
        assert {"session_timeout", "poll_timeout", "gc_pause", "membership_change", "metadata_change",
                "coordinator_change"} <= causes


@pytest.mark.kafka
def test_lab_runs_live(spark, tmp_path):
    from lab.runner import run_version

    result = run_version("4.1", out=tmp_path, short=True)
    assert result.ok, (result.failed, result.unlabelled)
    root = Path(result.out)
    truth = [json.loads(line) for line in (root / "truth" / "rebalances.jsonl").read_text().splitlines()]
    assert {t["cause"] for t in truth} >= {"membership_change", "session_timeout"}
    assert any(t.get("group_epoch") for t in truth), "no KIP-848 (consumer protocol) rebalance in the truth"
    landing = root / "landing"
    assert (landing / "broker-1" / "server.log").stat().st_size > 0
    consumers = [p for p in landing.iterdir() if p.name.startswith("lab-")]
    assert consumers and all(any(p.glob("gc-*.log")) for p in consumers)
    assert all(any(f for f in p.iterdir() if not f.name.startswith("gc")) for p in consumers)
    rows = parse_landing(spark, landing)
    logged = {(r["group_id"], r["generation"]) for r in rows
              if r["event_type"] in ("group_stabilized", "group_emptied")}
    classic = [t for t in truth if t["protocol"] == "classic"]
    assert classic and all((t["group_id"], t["generation_after"]) in logged for t in classic)
