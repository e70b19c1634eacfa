"""Rebalance incident analytics for Apache Kafka: the Spark pipeline (bronze, silver, gold) and its helpers."""
