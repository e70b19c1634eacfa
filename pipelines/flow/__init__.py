"""The run of the pipeline: landing to bronze and silver (ingest), silver to gold (reconstruct), the streams
that carry them (streams, run), the batch oracle (batch), what a run found (found) and `rebalance check` (check)."""
