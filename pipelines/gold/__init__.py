"""Gold layer: per-group timelines, rebalances with causes and evidence, rebuilt from silver per touched group."""
