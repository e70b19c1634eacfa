"""Silver layer: typed events, GC pauses and quarantine, parsed from bronze lines with Spark SQL expressions."""
