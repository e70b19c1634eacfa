from __future__ import annotations

import re

from pipelines.silver.templates import build_alternation, load_templates


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
    matched = [tid for tid, g in zip(alternation.template_ids, alternation.wrap_groups) if match.group(g)]
    assert matched[0] == "b_stable_members"
    groups = alternation.field_groups["b_stable_members"]
    assert match.group(groups["group_id"]) == "orders-app"
    assert match.group(groups["generation"]) == "42"
    assert match.group(groups["member_count"]) == "3"
