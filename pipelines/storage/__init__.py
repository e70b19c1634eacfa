"""The lakehouse: its Delta tables (lake), every write to them (writes), what the pipeline reads in (inputs),
Delta statements as SQL (delta_sql), what a run committed (commits), and SQL without Spark (fastsql)."""
