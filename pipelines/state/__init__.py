"""What a lakehouse remembers between runs beside its tables: the release that wrote its checkpoints (release),
what the quality and alert steps last saw (seen), and the errors that stop a run with a message (errors)."""
