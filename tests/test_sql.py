"""`rebalance sql`: every table of the architecture (and the project's own additions) is a view of its own name, and
`SHOW TABLES` lists exactly them."""

from __future__ import annotations

import json
import shutil

from jobs.cli import main
from pipelines.storage import lake
from schemas.tables import TABLES
from tests.conftest import make_config

# The tables of the architecture page (/work/shared/design/ARCHITECTURE.md, "Flow").
ARCHITECTURE = ["bronze_log_lines", "silver_events", "silver_gc_pauses", "silver_quarantine", "gold_group_states",
                "gold_rebalances", "gold_member_sessions", "gold_incidents", "gold_config_advice", "gold_group_health",
                "gold_rebalance_stats_hourly", "gold_alerts", "gold_estate_incidents"]
# The project's additions: file fingerprints, line accounting, the alert delivery log, quality verdicts, partition
# churn, what-if.
EXTRA = ["bronze_files", "silver_accounting", "gold_alert_deliveries", "gold_quality_results", "gold_partition_churn",
         "gold_whatif"]


def test_every_declared_table_is_one_of_the_architecture_or_a_known_addition():
    assert sorted(TABLES) == sorted(ARCHITECTURE + EXTRA)


def test_show_tables_lists_every_table_and_a_query_spark_rejects_is_one_line(spark, tmp_path, capfd):
    cfg = make_config(tmp_path)
    lake.ensure_tables(spark, cfg)
    conf = tmp_path / "test.yml"
    conf.write_text("spark:\n  master: local[2]\n  shuffle_partitions: 2\n  driver_memory: 2g\n")
    code = main(["sql", "SHOW TABLES", "--conf", str(conf), "--lakehouse", str(cfg.lakehouse), "--format", "json"])
    out = capfd.readouterr().out
    assert code == 0
    assert sorted(json.loads(line)["tableName"] for line in out.splitlines()) == sorted(ARCHITECTURE + EXTRA)

    # A lakehouse that lacks a table does not list it, even after another lakehouse registered it in this session.
    shutil.rmtree(cfg.lakehouse / "gold_quality_results")
    code = main(["sql", "SHOW TABLES", "--conf", str(conf), "--lakehouse", str(cfg.lakehouse), "--format", "json"])
    listed = {json.loads(line)["tableName"] for line in capfd.readouterr().out.splitlines()}
    assert code == 0 and listed == set(ARCHITECTURE + EXTRA) - {"gold_quality_results"}

    # A query naming a column no table has: one line saying so (the fast engine's refusal, then Spark's), no stack.
    code = main(["sql", "SELECT no_such_column FROM gold_rebalances", "--conf", str(conf), "--lakehouse",
                 str(cfg.lakehouse)])
    err = capfd.readouterr().err
    assert code == 2
    assert "the query is not valid" in err and "no_such_column" in err
    assert "QueryContextLogger" not in err and "\tat org.apache" not in err
