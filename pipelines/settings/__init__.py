"""The configuration: conf/*.yml validated (config), what it says of each source folder (sources), and
the glob matching both use (globs)."""
