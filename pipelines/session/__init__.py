"""The Spark session and what runs on it: a local session with Delta (spark), a Spark Connect one (remote), the
supported versions (versions), frames pinned for a block of work (caching), actions side by side (together),
and the Kafka reachability check (kafka_check)."""
