"""Data-quality gates over the silver and gold tables: rules (rules.py), their Great Expectations validation
(validate.py) and the quality step of a run (stage.py), whose verdicts land in gold_quality_results."""
