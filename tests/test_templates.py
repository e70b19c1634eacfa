from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from pipelines.silver.templates import (
    COMPONENTS,
    Template,
    build_alternation,
    compile_template,
    load_rows,
    load_templates,
)
from tests.conftest import SHARED


def test_every_template_compiles_with_a_prefilter_literal():
    templates = load_templates()
    assert len(templates) > 50
    for t in templates:
        re.compile(t.pattern)
        assert len(t.literal) >= 5, t.template.id


def test_alternation_finds_the_first_matching_template_and_its_fields():
    alternation = build_alternation(load_templates())
    body = "Stabilized group orders-app generation 42 (__consumer_offsets-17) with 3 members"
    match = re.match(alternation.pattern, body)
    assert match
    matched = [tid for tid, g in zip(alternation.template_ids, alternation.wrap_groups, strict=True) if match.group(g)]
    assert matched[0] == "b_stable_members"
    groups = alternation.field_groups["b_stable_members"]
    assert match.group(groups["group_id"]) == "orders-app"
    assert match.group(groups["generation"]) == "42"
    assert match.group(groups["member_count"]) == "3"


def test_a_period_right_after_a_field_ends_the_field():
    fenced = compile_template(Template(id="t", kind="broker", event="e", versions="3.8-4.0",
                                       text="Member {member_id} fenced from the group because {reason}."))
    match = re.match(fenced.pattern, "Member m-1 fenced from the group because the member session expired..")
    assert match and match.group(fenced.groups["reason"]) == "the member session expired."
    joined = compile_template(Template(id="t", kind="client", event="e", versions="1.0-4.0", text="(Re-)joining group"))
    assert re.match(joined.pattern, "(Re-)joining group.\n\tat a.b.C.d(C.java:1)")


@pytest.mark.parametrize("versions", ["4.x", "2.1-", "3.0-2.8", "2.1 - 4.0"])
def test_versions_must_be_ranges_of_releases(versions):
    with pytest.raises(ValidationError, match="versions"):
        Template(id="t", kind="broker", event="e", versions=versions, text="Stabilized group {group_id}")


def test_component_files_hold_every_row_once_in_match_order():
    rows = [t for component in COMPONENTS for t in load_rows(component)]
    assert [t.template.id for t in load_templates()] == [t.id for t in rows]
    assert {t.kind for t in load_rows("broker_classic") + load_rows("broker_new")} == {"broker"}
    assert {t.kind for t in load_rows("client_classic") + load_rows("client_kip848")} == {"client"}


CATALOG = SHARED / "kafka-logs" / "templates.tsv"
# Rows that are not catalog wordings: lines with no group information, wordings seen in real logs after the
# catalog's snapshot (see their comments), and rows that merge catalog rows into one field.
NOT_IN_CATALOG = {
    "b_removed_offsets", "b_starting_up", "b_startup_complete", "b_shutting_down", "b_shutdown_complete",
    "b_rebalance_reaper", "n_epoch_bumped_hash", "n_unload_never_loaded", "c_rejoin_since", "c_commit_failed_exception",
    "c_commit_failed_kicked_out", "c_autocommit_async_failed", "c_partition_commit_failed", "c_cluster_id",
    "c_connection_failed", "c_offset_reset", "c_offset_set", "c_found_no_offset", "c_disconnect_node",
    "c_node_disconnected", "c_cancelled_in_flight", "k_interrupt_reconciliation", "k_hb_fatal",
    "k_hb_unreleased_instance", "k_leave_completed", "k_commit_without_epoch",
    # AbstractConfig.logAll's `ConsumerConfig values:` record (3.9.2 and 4.1.2 lab logs), not a group wording.
    "c_config_protocol", "c_config_static", "c_config",
}


def _catalog_regexes() -> list[re.Pattern[str]]:
    placeholder = re.compile(r"\$\{[^}]*\}(?:\.\w+)?|\$\w+(?:\.\w+)?|\{\}|%s|%d")
    out = []
    for row in CATALOG.read_text(encoding="utf-8").splitlines()[1:]:
        cols = row.split("\t")
        if cols[2] not in ("INFO", "WARN", "ERROR", "DEBUG", "EXCEPTION"):
            continue
        text = cols[5].replace("\\n", "\n").replace("\\t", "\t").rstrip()
        pieces = placeholder.split(text)
        out.append(re.compile("^" + ".*?".join(re.escape(p) for p in pieces) + r"\.?\s*$", re.S))
    return out


@pytest.mark.skipif(not CATALOG.is_file(), reason="the shared catalog is absent")
def test_every_row_renders_a_wording_of_the_catalog():
    catalog = _catalog_regexes()
    orphans = []
    for t in load_templates():
        if t.template.id in NOT_IN_CATALOG:
            continue
        sample = re.sub(r"\{(\w+)\}", lambda m: "" if m.group(1).startswith("_") else "v", t.template.text)
        if not any(c.match(sample) for c in catalog):
            orphans.append(t.template.id)
    assert orphans == []
