"""Estate incidents through the streaming run: a simulated broker stall (simulator/estate.py) landing in two drops,
ingested and reconstructed incrementally, gives the batch result (gold_estate_incidents and the rebalances'
estate_incident_id), finds the true incident, and raises one estate_incident alert."""

from __future__ import annotations

import json

from pyspark.testing import assertDataFrameEqual

from pipelines.flow.batch import batch_tables
from pipelines.flow.derived import write_estate
from pipelines.flow.run import STAGES, run
from pipelines.gold.estate_frames import estate_rows, params_from
from pipelines.report.data import collect_fast
from pipelines.report.render import render
from pipelines.storage import lake
from simulator import simulate
from simulator.evaluate import match_estates
from tests.conftest import land_files, make_config


def test_a_broker_stall_landing_in_two_drops_gives_the_batch_result_and_one_alert(spark, tmp_path):
    # Seed 3: the stalled broker expires members of three of its five groups (the truth file says which).
    sim = simulate(tmp_path / "sim", seed=3, groups=8, brokers=2, hours=1.0, noise_density=0.05, broker_stalls=1,
                   kafka_version="3.6")
    truth = [json.loads(line) for line in (tmp_path / "sim" / "truth" / "estate_incidents.jsonl").read_text()
             .splitlines()]
    cfg = make_config(tmp_path)
    files = sorted(p for p in sim.landing_dir.rglob("*") if p.is_file())
    # Client logs first, the brokers' after: the incident is first seen from one side, then whole.
    drops = [[f for f in files if not f.parent.name.startswith("broker-")],
             [f for f in files if f.parent.name.startswith("broker-")]]
    for number, drop in enumerate(drops, 1):
        land_files(drop, cfg.landing)
        run(spark, cfg, stages=("ingest", "reconstruct") if number < len(drops) else STAGES)
    streamed = lake.read_table(spark, cfg, "gold_estate_incidents")
    rebalances = lake.read_table(spark, cfg, "gold_rebalances").select("rebalance_id", "estate_incident_id")
    with batch_tables(spark, cfg) as oracle:
        assertDataFrameEqual(streamed, oracle["gold_estate_incidents"].select(streamed.columns))
        assertDataFrameEqual(rebalances, oracle["gold_rebalances"].select(rebalances.columns))
    found = [r.asDict() for r in streamed.collect()]
    score = match_estates(found, truth)
    assert (score.found, score.truth, score.invented) == (1, 1, 0), (score, found)
    alerts = lake.read_table(spark, cfg, "gold_alerts").filter("rule = 'estate_incident'").collect()
    assert len(alerts) == 1 and truth[0]["root_instance"] in alerts[0].summary
    # The report's estate section, read from the same lakehouse by the engine `rebalance report` uses locally.
    page = render(collect_fast(cfg))
    assert 'id="estate"' in page and found[0]["summary"] in page.replace("&#x27;", "'")
    # Tied: the stall's own rebalances (each expiry, and a rejoin that opened one of its own), no other.
    stalled = [json.loads(line) for line in sim.truth_file.read_text().splitlines()
               if json.loads(line)["scenario"] == "broker_stall"]
    assert rebalances.filter("estate_incident_id IS NOT NULL").count() == len(found[0]["rebalance_ids"]) == len(
        stalled)
    # A batch that changes nothing in the estate writes nothing: the rows are compared before any MERGE.
    tables = {name: lake.read_table(spark, cfg, name) for name in (
        "gold_rebalances", "gold_member_sessions", "gold_group_states", "silver_events", "silver_gc_pauses")}
    versions = [lake.table_version(spark, cfg, name) for name in ("gold_estate_incidents", "gold_rebalances")]
    rows = estate_rows(tables["gold_rebalances"], tables["gold_member_sessions"], tables["gold_group_states"],
                       tables["silver_events"], tables["silver_gc_pauses"], params_from(cfg.thresholds))
    assert write_estate(spark, cfg, rows) == 1
    assert [lake.table_version(spark, cfg, name) for name in ("gold_estate_incidents", "gold_rebalances")] == versions


def test_a_simulated_deploy_wave_is_found_with_its_groups(spark, tmp_path):
    # One process of four to six idle groups restarts in turn (simulator/estate.py DeployWaves): the batch pipeline
    # ties exactly those groups' leaves and joins into one deploy wave.
    sim = simulate(tmp_path / "sim", seed=5, groups=8, brokers=2, hours=1.0, noise_density=0.05, deploy_waves=1,
                   kafka_version="3.6")
    truth = [json.loads(line) for line in (tmp_path / "sim" / "truth" / "estate_incidents.jsonl").read_text()
             .splitlines()]
    assert [t["root_kind"] for t in truth] == ["deploy_wave"] and len(truth[0]["groups"]) >= 4
    waved = [json.loads(line) for line in sim.truth_file.read_text().splitlines()
             if json.loads(line)["scenario"] == "deploy_wave"]
    assert {r["group_id"] for r in waved} == set(truth[0]["groups"])
    assert {r["cause_detail"] for r in waved} == {"member_leave", "member_join"}
    with batch_tables(spark, make_config(tmp_path, landing=sim.landing_dir)) as tables:
        found = [r.asDict() for r in tables["gold_estate_incidents"].collect()]
    score = match_estates(found, truth)
    assert (score.found, score.truth, score.invented) == (1, 1, 0), (score, found)
