"""Alerts: rules over the gold tables (rules.py) and their delivery to a JSON-lines feed and a webhook (sinks.py)."""
