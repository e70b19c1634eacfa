"""The cluster simulator: determinism, truth against the broker logs it wrote, causes, volume, and GC evidence."""

from __future__ import annotations

import gzip
import json
import re
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from simulator import SimulationSummary, simulate

CAUSES = {"session_timeout", "poll_timeout", "gc_pause", "membership_change", "metadata_change", "coordinator_change",
          "unknown"}
END_LINE = re.compile(r"Stabilized group (\S+) generation (\d+) |Group (\S+) with generation (\d+) is now empty")
PREPARING = re.compile(r"^\[([^\]]+)\] INFO \[GroupCoordinator \d+\]: Preparing to rebalance group (\S+) in state "
                       r"PreparingRebalance with old generation (\d+) ")
LOG4J_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ")
LOGBACK_TS = re.compile(r"^(\d\d:\d\d:\d\d\.\d{3}) \[")
# The lines of a multi-line record after its first (ConsumerConfig values: TAB-indented settings; log4j's `(%c)` on
# a line of its own after the message's final line break; logback's empty line after it).
CONTINUED = re.compile(r"^(?:\t[a-z][\w.-]* = .*| \([\w.$]+\)|)$")
GC_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\+0000\]\[[\d.]+s\]\[info\]\[gc\] GC\(\d+\) "
                     r"Pause (\w+).* (\d+\.\d{3})ms$")


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> SimulationSummary:
    return simulate(tmp_path_factory.mktemp("default"))


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def truth(summary: SimulationSummary) -> list[dict]:
    return [json.loads(line) for line in summary.truth_file.read_text().splitlines()]


def broker_lines(landing: Path) -> list[str]:
    return [line for f in sorted(landing.glob("broker-*/server.log.*")) for line in f.read_text().splitlines()]


def log4j_ms(text: str) -> int:
    moment = datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def iso_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def full_gc_pauses(folder: Path) -> list[tuple[int, int, float]]:
    """(start ms, end ms, duration ms) of every full GC pause in an instance folder's GC logs."""
    pauses = []
    for gc_file in folder.glob("gc.log*"):
        for line in gc_file.read_text().splitlines():
            match = GC_LINE.match(line)
            if match and match.group(2) == "Full":
                end = iso_ms(match.group(1) + "Z")
                pauses.append((end - round(float(match.group(3))), end, float(match.group(3))))
    return pauses


def test_same_seed_writes_the_same_bytes_and_another_seed_does_not(default_run: SimulationSummary,
                                                                   tmp_path: Path) -> None:
    original = tree(default_run.landing_dir.parent)
    assert tree(simulate(tmp_path / "again").landing_dir.parent) == original
    assert tree(simulate(tmp_path / "other", seed=8).landing_dir.parent) != original


def test_truth_matches_the_rebalances_the_brokers_logged(default_run: SimulationSummary) -> None:
    lines = broker_lines(default_run.landing_dir)
    logged = Counter()
    started = {}
    for line in lines:
        if match := END_LINE.search(line):
            group, generation = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            logged[(group, int(generation))] += 1
        if match := PREPARING.match(line):
            started[(match.group(2), int(match.group(3)) + 1)] = log4j_ms(match.group(1))
    rows = truth(default_run)
    expected = Counter((row["group_id"], row["generation_after"]) for row in rows)
    assert logged == expected
    assert set(logged.values()) == {1}
    assert len(rows) == default_run.rebalances
    last: dict[str, tuple[int, int]] = {}
    for row in rows:
        key = (row["group_id"], row["generation_after"])
        assert started[key] == iso_ms(row["started_at"]), key
        assert row["cause"] in CAUSES
        previous = last.get(row["group_id"], (-1, 0))
        assert (iso_ms(row["started_at"]), row["generation_after"]) > previous
        assert row["generation_after"] > previous[1]
        last[row["group_id"]] = (iso_ms(row["started_at"]), row["generation_after"])
    assert [iso_ms(r["started_at"]) for r in rows] == sorted(iso_ms(r["started_at"]) for r in rows)


def test_every_cause_but_unknown_appears(default_run: SimulationSummary) -> None:
    assert set(default_run.by_cause) == CAUSES - {"unknown"}
    assert sum(default_run.by_cause.values()) == default_run.rebalances
    details = {(row["cause"], row["cause_detail"]) for row in truth(default_run)}
    assert {("gc_pause", "rejoin"), ("poll_timeout", "rejoin"), ("membership_change", "member_leave")} <= details


def test_layout_and_file_order(default_run: SimulationSummary) -> None:
    landing = default_run.landing_dir
    kinds = Counter()
    for path in sorted(landing.rglob("*")):
        if not path.is_file():
            continue
        stamps = []
        for line in path.read_text().splitlines():
            if match := LOG4J_TS.match(line):
                stamps.append(match.group(1))
                kinds["log4j"] += 1
            elif match := LOGBACK_TS.match(line):
                stamps.append(match.group(1))
                kinds["logback"] += 1
            elif match := GC_LINE.match(line) or re.match(r"^\[([^\]]+)\+0000\]", line):
                stamps.append(match.group(1))
                kinds["gc"] += 1
            elif CONTINUED.match(line) and stamps:
                kinds["continued"] += 1
            else:
                pytest.fail(f"{path}: unrecognised line {line[:80]}")
        assert stamps == sorted(stamps), path
    assert min(kinds.values()) > 100, kinds
    assert sum(1 for _ in landing.glob("*/server.log.*")) == 3 * 2
    assert default_run.files == sum(1 for p in landing.rglob("*") if p.is_file())
    assert default_run.lines == sum(kinds.values())


def test_gc_pause_expiry_is_covered_by_a_long_pause_of_that_process(default_run: SimulationSummary) -> None:
    """The pause starts after the last heartbeat the broker saw (inside the session window before the expiry) and
    lasts longer than session.timeout.ms; unified logging prints it at its end, so that line comes after the expiry."""
    landing = default_run.landing_dir
    lines = broker_lines(landing)
    clients = {f: f.read_text() for f in landing.glob("*/consumer.log.*")}
    rows = [r for r in truth(default_run) if r["cause"] == "gc_pause" and r["cause_detail"] == "heartbeat_expiration"]
    assert rows
    long_pauses = short_pauses = 0
    for folder in {f.parent for f in clients}:
        session = int(re.search(r"\tsession\.timeout\.ms = (\d+)\n", "".join(
            t for f, t in clients.items() if f.parent == folder)).group(1))
        for gc_file in folder.glob("gc.log*"):
            for line in gc_file.read_text().splitlines():
                match = GC_LINE.match(line)
                if match and match.group(2) == "Full":
                    long_pauses += float(match.group(3)) > session
                    short_pauses += float(match.group(3)) < session - 3000
    assert long_pauses == len(rows)
    assert short_pauses > 0
    for row in rows:
        member = row["trigger_member_id"]
        expiry = next(log4j_ms(LOG4J_TS.match(x).group(1)) for x in lines if f"Member {member} in group" in x)
        folder = next(f.parent for f, text in clients.items() if f"memberId='{member}'" in text)
        session = int(re.search(r"\tsession\.timeout\.ms = (\d+)\n", "".join(
            t for f, t in clients.items() if f.parent == folder)).group(1))
        pauses = full_gc_pauses(folder)
        assert any(d > session and expiry - session <= s < expiry < e <= expiry + session for s, e, d in pauses), (
            member, expiry, pauses)


CONFIG_RECORD = re.compile(r"ConsumerConfig values: \n((?:\t[^\n]*\n)+)")
# the record ends with the message's line break, then log4j's `(%c)` or logback's line separator
BEFORE_VERSION = re.compile(r"ConsumerConfig values: \n(?:\t[^\n]*\n)+(?: \(org\.apache\.kafka\.clients\.consumer\."
                            r"ConsumerConfig\)\n|\n)[^\n]*Kafka version: ")
MEMBER_METADATA = re.compile(r"clientId=([^,]+), clientHost=/[^,]+, sessionTimeoutMs=(\d+), rebalanceTimeoutMs=(\d+)")


def test_each_consumer_start_logs_the_settings_the_simulator_uses(default_run: SimulationSummary) -> None:
    """new KafkaConsumer(...) logs `ConsumerConfig values:` (sorted TAB-indented settings) just before `Kafka
    version:`; its timeouts are the ones the coordinator holds for that client (MemberMetadata in broker lines)."""
    landing = default_run.landing_dir
    used = {m.group(1): (m.group(2), m.group(3)) for line in broker_lines(landing)
            for m in MEMBER_METADATA.finditer(line)}
    assert used
    checked = set()
    for folder in sorted(p for p in landing.iterdir() if any(p.glob("consumer.log.*"))):
        text = "".join(f.read_text() for f in sorted(folder.glob("consumer.log.*")))
        records = CONFIG_RECORD.findall(text)
        assert records and len(records) == len(BEFORE_VERSION.findall(text)) == text.count("Kafka version: ")
        for record in records:
            settings = dict(line[1:].split(" = ", 1) for line in record.splitlines())
            assert list(settings) == sorted(settings)
            assert f"[Consumer clientId={settings['client.id']}, groupId={settings['group.id']}] " in text
            assert settings["group.instance.id"] == "null" and "group.protocol" not in settings
            assert settings["heartbeat.interval.ms"] == "3000"
            # a 3.x default: `supportedProtocols=List(range, cooperative-sticky)` in the broker's MemberMetadata
            assert settings["partition.assignment.strategy"] == (
                "[class org.apache.kafka.clients.consumer.RangeAssignor, "
                "class org.apache.kafka.clients.consumer.CooperativeStickyAssignor]")
            if settings["client.id"] in used:
                assert (settings["session.timeout.ms"], settings["max.poll.interval.ms"]) == used[settings["client.id"]]
                checked.add(settings["client.id"])
    assert checked


def test_lines_target_is_met_quickly(tmp_path: Path) -> None:
    began = time.perf_counter()
    summary = simulate(tmp_path / "big", lines=200_000)
    elapsed = time.perf_counter() - began
    print(f"simulate(lines=200_000): {summary.lines} lines in {summary.files} files, {elapsed:.2f} s")
    assert abs(summary.lines - 200_000) <= 20_000
    written = sum(len(p.read_bytes().splitlines()) for p in summary.landing_dir.rglob("*") if p.is_file())
    assert written == summary.lines
    noise = sum(1 for line in broker_lines(summary.landing_dir) if "GroupCoordinator" not in line
                and "GroupMetadata" not in line)
    assert noise / summary.lines > 0.7


def test_a_quiet_long_estate_is_thin_and_active_to_its_end(tmp_path: Path) -> None:
    busy = simulate(tmp_path / "busy", hours=48, groups=1)
    quiet = simulate(tmp_path / "quiet", hours=48, groups=1, noise_density=0.05, cycle_every_hours=12)
    assert quiet.lines < busy.lines / 4 and 0 < quiet.rebalances < busy.rebalances
    # The incidents are spread over the span, not packed at most 30 minutes apart at its start.
    started = sorted(datetime.fromisoformat(json.loads(line)["started_at"]) for line in
                     quiet.truth_file.read_text().splitlines())
    assert (started[-1] - started[0]).total_seconds() > 36 * 3600
    with pytest.raises(ValueError, match="noise_density"):
        simulate(tmp_path / "both", lines=1000, noise_density=0.5)


@pytest.mark.parametrize("version", ["2.4", "2.8"])
def test_older_versions_use_their_wording(tmp_path: Path, version: str) -> None:
    summary = simulate(tmp_path / version, kafka_version=version, hours=1.0, gzip_files=True)
    files = sorted(summary.landing_dir.rglob("*.gz"))
    assert files and len(files) == summary.files
    text = "\n".join(gzip.decompress(f.read_bytes()).decode() for f in files if "server.log" in f.name)
    clients = "\n".join(gzip.decompress(f.read_bytes()).decode() for f in files if "consumer.log" in f.name)
    assert "client reason" not in text and "Request joining group due to" not in clients
    assert "Attempt to heartbeat failed since group is rebalancing" in clients
    assert bool(re.search(r"Stabilized group \S+ generation \d+ \(__consumer_offsets-\d+\) with", text)) == (
        version == "2.8")
    assert ("Successfully synced group in generation Generation{" in clients) == (version == "2.8")
    assert "\tgroup.instance.id = null\n" in clients and "group.protocol" not in clients
    assert "\tpartition.assignment.strategy = [class org.apache.kafka.clients.consumer.RangeAssignor]\n" in clients
    assert "Consumer settings" not in clients
    rows = [json.loads(line) for line in summary.truth_file.read_text().splitlines()]
    assert len(rows) == len(re.findall(r"Stabilized group |is now empty", text))


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="kafka_version"):
        simulate(tmp_path, kafka_version="1.0")
    with pytest.raises(ValueError):
        simulate(tmp_path, groups=0)


def test_refuses_a_landing_directory_that_holds_files(default_run: SimulationSummary) -> None:
    with pytest.raises(FileExistsError, match="empty directory"):
        simulate(default_run.landing_dir.parent)


# ---- Kafka 4.1: the new group coordinator, and KIP-848 consumer groups ------------------------------------------

BUMPED = re.compile(r"^\[([^\]]+)\] INFO \[GroupCoordinator id=\d+ topic=__consumer_offsets partition=\d+\] "
                    r"\[GroupId (\S+)\] Bumped group epoch to (\d+) with metadata hash (-?\d+)\. ")
MEMBER_EVENT = re.compile(r"\[GroupId (\S+)\] Member (\S+) (joins the consumer group using the consumer protocol|left "
                          r"the consumer group|fenced from the group because the member session expired)\. ")


@pytest.fixture(scope="module")
def consumer_run(tmp_path_factory: pytest.TempPathFactory) -> SimulationSummary:
    return simulate(tmp_path_factory.mktemp("consumer"), kafka_version="4.1", group_protocol="consumer", groups=3,
                    hours=4.0)


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> SimulationSummary:
    return simulate(tmp_path_factory.mktemp("mixed"), kafka_version="4.1", group_protocol="mixed", groups=4, hours=2.0)


def test_consumer_protocol_is_deterministic(mixed_run: SimulationSummary, tmp_path: Path) -> None:
    original = tree(mixed_run.landing_dir.parent)
    kwargs = {"kafka_version": "4.1", "group_protocol": "mixed", "groups": 4, "hours": 2.0}
    assert tree(simulate(tmp_path / "again", **kwargs).landing_dir.parent) == original
    assert tree(simulate(tmp_path / "other", seed=8, **kwargs).landing_dir.parent) != original


def test_each_epoch_bump_is_one_truth_rebalance_after_its_member_event(consumer_run: SimulationSummary) -> None:
    """As the real 4.1.2 lab labels KIP-848 groups: one row per `Bumped group epoch to N` (generation_after = N), at the
    bump's time, caused by the member line the coordinator printed just before it (none for a metadata change)."""
    rows = truth(consumer_run)
    by_key = {(r["group_id"], r["generation_after"]): r for r in rows}
    assert len(by_key) == len(rows) == consumer_run.rebalances
    details = {"joins": ("member_join", "rejoin"), "left": ("member_leave", "leave_on_poll_timeout"),
               "fenced": ("heartbeat_expiration",)}
    seen = set()
    for broker in sorted(consumer_run.landing_dir.glob("broker-*")):
        last_event: dict[str, tuple[str, str]] = {}
        for line in (x for f in sorted(broker.glob("server.log.*")) for x in f.read_text().splitlines()):
            if match := MEMBER_EVENT.search(line):
                last_event[match.group(1)] = (match.group(2), match.group(3).split()[0])
            elif match := BUMPED.match(line):
                group, epoch = match.group(2), int(match.group(3))
                row = by_key[(group, epoch)]
                assert (row["protocol"], row["outcome"], row["group_epoch"]) == ("consumer", "epoch", epoch)
                assert iso_ms(row["started_at"]) == log4j_ms(match.group(1))
                event = last_event.pop(group, None)
                if row["cause"] == "metadata_change":
                    assert event is None and row["trigger_member_id"] is None
                    assert match.group(4) != "0"
                else:
                    assert event is not None and event[0] == row["trigger_member_id"], (row, event)
                    assert row["cause_detail"] in details[event[1]], (row, event)
                seen.add((group, epoch))
    assert seen == set(by_key)


def test_consumer_groups_play_every_kip848_incident(consumer_run: SimulationSummary) -> None:
    assert set(consumer_run.by_cause) == CAUSES - {"unknown", "coordinator_change"}
    details = {(row["cause"], row["cause_detail"]) for row in truth(consumer_run)}
    assert {("gc_pause", "heartbeat_expiration"), ("gc_pause", "rejoin"), ("poll_timeout", "leave_on_poll_timeout"),
            ("poll_timeout", "rejoin"), ("session_timeout", "heartbeat_expiration"),
            ("metadata_change", "partition_count_change"), ("membership_change", "member_leave")} <= details
    # a KIP-848 member keeps its client-generated id when it rejoins after a fence or a poll timeout
    rows = truth(consumer_run)
    for row in rows:
        if row["cause_detail"] == "rejoin":
            assert any(r["trigger_member_id"] == row["trigger_member_id"] and r["cause"] == row["cause"]
                       and r["cause_detail"] != "rejoin" for r in rows)


def test_a_fenced_members_gc_log_shows_the_pause(consumer_run: SimulationSummary) -> None:
    landing = consumer_run.landing_dir
    lines = broker_lines(landing)
    clients = {f: f.read_text() for f in landing.glob("*/consumer.log.*")}
    rows = [r for r in truth(consumer_run) if r["cause"] == "gc_pause" and r["cause_detail"] == "heartbeat_expiration"]
    assert rows
    for row in rows:
        member = row["trigger_member_id"]
        fenced = next(log4j_ms(LOG4J_TS.match(x).group(1)) for x in lines if f"Member {member} fenced" in x)
        folder = next(f.parent for f, text in clients.items() if f"Member {member} with epoch" in text)
        pauses = full_gc_pauses(folder)
        assert any(start < fenced < end for start, end, _ in pauses), (member, fenced, pauses)


def test_kafka_41_wording(mixed_run: SimulationSummary) -> None:
    """The new coordinator's prefix and wording for classic groups; the 4.1 clients of both protocols."""
    landing = mixed_run.landing_dir
    brokers = "\n".join(broker_lines(landing))
    clients = "\n".join(f.read_text() for f in sorted(landing.glob("*/consumer.log.*")))
    assert mixed_run.groups == ["orders-processor", "payments-ledger", "shipping-events", "fraud-scoring"]
    assert re.search(r"\] Stabilized group orders-processor generation \d+ with \d+ members\. \(org\.apache\.kafka\."
                     r"coordinator\.group\.GroupMetadataManager\)", brokers)
    assert "[GroupId payments-ledger] Bumped group epoch to 1 " in brokers
    assert "[GroupId shipping-events] Bumped group epoch to 1 " in brokers
    assert "[GroupId orders-processor]" not in brokers and "[GroupId fraud-scoring]" not in brokers
    assert "(kafka.coordinator.group." not in brokers and "expired offsets" not in brokers
    assert "Kafka commitId" not in clients and "Kafka version: 4.1.2" in clients
    assert "isFenced: false)" in clients and "Metrics reporters closed" not in clients
    assert "\tgroup.protocol = consumer\n" in clients and "\tgroup.protocol = classic\n" in clients
    assert "\tauto.include.jmx.reporter" not in clients
    assert "Reconciling assignment with local epoch 0\n\tMember:                                    " in clients
    assert " (org.apache.kafka.common.config.AbstractConfig)" in clients


def test_consumer_protocol_needs_kafka_4(tmp_path: Path) -> None:
    for protocol in ("consumer", "mixed"):
        with pytest.raises(ValueError, match="needs Kafka 4"):
            simulate(tmp_path, kafka_version="3.6", group_protocol=protocol)
    with pytest.raises(ValueError, match="group_protocol"):
        simulate(tmp_path, kafka_version="4.1", group_protocol="share")


def test_a_deploy_wave_starts_after_the_estate_was_quiet_for_the_waves_gap(tmp_path):
    # A group's own restarts ending less than the deploy-wave rule's gap (120 s) before a wave would read, in the
    # logs, as the wave's first group: the truth could not be found by anyone. So a wave waits for a quiet estate.
    simulate(tmp_path, seed=19, groups=40, hours=6, kafka_version="3.6", broker_stalls=4, deploy_waves=3)
    truth = [json.loads(line) for line in (tmp_path / "truth" / "rebalances.jsonl").read_text().splitlines()]
    waves = [json.loads(line) for line in (tmp_path / "truth" / "estate_incidents.jsonl").read_text().splitlines()
             if json.loads(line)["root_kind"] == "deploy_wave"]
    assert waves

    def at(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    for wave in waves:
        start = at(wave["started_at"])
        before = [r for r in truth if r["scenario"] not in ("deploy_wave", "broker_stall")
                  and r["cause"] == "membership_change" and 0 < (start - at(r["started_at"])).total_seconds() < 120]
        assert before == [], (wave, before)
