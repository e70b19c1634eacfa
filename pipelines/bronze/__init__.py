"""Bronze layer: candidate lines of closed landing files with provenance, positions and per-file accounting."""
