"""Kafka group-membership log wordings as data, one YAML file per component (see pipelines/silver/templates.py)."""
