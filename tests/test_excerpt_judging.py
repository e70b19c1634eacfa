"""How the excerpt benchmark judges a labelled line that the parse split into several records."""

from bench.excerpts import judge_line


def _row(disposition: str, event_type: str | None = None, group: str | None = None) -> dict[str, object]:
    return {"disposition": disposition, "event_type": event_type, "group_id": group,
            "template_id": "t" if event_type else None}


def test_a_line_counts_by_its_best_part():
    # An Airflow task log line wraps the application's own record: the platform's prefix is one part (noise), the
    # kafka-python record after it another (typed).
    outer = _row("noise")
    inner = _row("event", "client_coordinator_discovered", "orders")
    assert judge_line([outer, inner], "orders") == ("event", "orders")
    assert judge_line([inner, outer], "orders") == ("event", "orders")


def test_a_wrong_group_is_worse_than_the_right_one_and_better_than_nothing():
    wrong = _row("event", "client_joining", "payments")
    assert judge_line([_row("noise"), wrong], "orders") == ("wrong_group", "payments")
    assert judge_line([wrong, _row("event", "client_joining", "orders")], "orders") == ("event", "orders")


def test_a_line_the_parse_left_no_row_for_is_noise():
    assert judge_line([], "orders") == ("noise", None)
    assert judge_line([_row("quarantine")], None) == ("quarantined", None)
