"""The local dashboard: one self-contained HTML file rendered from the gold tables (no scripts, no external assets)."""
