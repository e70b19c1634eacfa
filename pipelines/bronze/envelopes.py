"""Kafka records written by log shippers to the raw lines the file source gives (`value`, `_metadata`, `torn`).

A shipper wraps each log line in its own JSON envelope; the fields that name the process and the file are mapped onto
what a landing path `<landing>/<instance>/<file>` says, so everything after bronze is the same as for files:

| shipper    | line    | instance (the first field found)                       | file                            |
|------------|---------|--------------------------------------------------------|---------------------------------|
| Filebeat   | message | kubernetes.pod.name, container.name, host.name         | log.file.path                   |
| Vector     | message | kubernetes.pod_name, kubernetes.container_name, host   | file                            |
| Fluent Bit | log     | kubernetes.pod_name, kubernetes.container_name         | filepath or path (its Path_Key) |
| Logstash   | message | host.name (ECS), host                                  | log.file.path (ECS), path       |

A plain line (no envelope) takes its instance and file from the record key `<instance>/<file>` (a key without `/` is
the instance, the file is then the topic), else the topic and partition.

The records of one (topic, partition, instance, file) in one micro-batch form one "file" of the batch, named
`kafka:/<topic>/<partition>/<instance>/<file>@<first offset>`, with its lines numbered in offset order. Offsets that
a partition skipped (retention deleted them before they were read) become one quarantined record
(`kafka_offsets_lost`); a record whose envelope is not the configured one becomes a quarantined record
(`unknown_envelope`)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

SHIPPERS = ("filebeat", "vector", "fluentbit", "logstash")
LOST = "kafka_offsets_lost"
UNKNOWN = "unknown_envelope"


def _field(*paths: str) -> Column:
    """The first of these JSON paths of the record that holds a name (an object, such as Filebeat's `host`, is
    skipped: get_json_object gives its JSON text)."""
    values = [F.get_json_object("_json", p) for p in paths]
    return F.coalesce(*[F.when(~v.startswith("{"), v) for v in values])


def _shipper() -> Column:
    """Which shipper wrote a JSON record, from the marks each leaves (null: none of them)."""
    has = {p: F.get_json_object("_json", p).isNotNull() for p in
           ("$.@metadata.beat", "$.agent.type", "$.source_type", "$.@version", "$.log")}
    log_is_text = has["$.log"] & ~F.get_json_object("_json", "$.log").startswith("{")
    return (F.when(has["$.@metadata.beat"] | (F.get_json_object("_json", "$.agent.type") == "filebeat"), "filebeat")
            .when(has["$.source_type"], "vector")
            .when(has["$.@version"], "logstash")
            .when(log_is_text, "fluentbit"))


def with_envelope_fields(records: DataFrame, *, envelope: str = "auto") -> DataFrame:
    """Kafka records (`key`, `value` as strings, `topic`, `partition`, `offset`, `timestamp`) with `line` (the log
    line), `instance`, `file_name`, `shipper` and `envelope_problem` (UNKNOWN where the record's shape is not
    `envelope`)."""
    value = F.col("value")
    is_json = F.ltrim(value).startswith("{") & F.get_json_object(value, "$").isNotNull()
    staged = records.withColumn("_json", F.when(is_json, value))
    shipper = F.when(F.col("_json").isNotNull(), _shipper())
    staged = staged.withColumn("shipper", shipper if envelope in ("auto", "plain") else
                               F.when(shipper == envelope, shipper))
    # The line as it is, whatever it starts with (a Kafka line starts with `[`, a JSON log line with `{`).
    line = F.when(F.col("shipper") == "fluentbit", F.get_json_object("_json", "$.log")).when(
        F.col("shipper").isNotNull(), F.get_json_object("_json", "$.message"))
    key_parts = F.split(F.coalesce(F.col("key"), F.lit("")), "/", 2)
    key_instance = F.nullif(key_parts[0], F.lit(""))
    key_file = F.when(F.size(key_parts) > 1, key_parts[1])
    json_instance = _field("$.kubernetes.pod.name", "$.kubernetes.pod_name", "$.container.name",
                           "$.kubernetes.container_name", "$.host.name", "$.host", "$.hostname")
    json_path = _field("$.log.file.path", "$.file", "$.filepath", "$.path", "$['log.file.path']")
    enveloped = F.col("shipper").isNotNull()
    instance = F.when(enveloped, F.coalesce(json_instance, key_instance)).otherwise(key_instance)
    path = F.when(enveloped, json_path).otherwise(key_file)
    fallback_instance = F.concat_ws("-", F.col("topic"), F.col("partition").cast("string"))
    # Only the configured shipper's records are unwrapped; auto also passes JSON of no shipper as a line (a JSON
    # log layout), and plain passes every record as it is.
    if envelope == "plain":
        problem = F.lit(None).cast("string")
    elif envelope == "auto":
        problem = F.when(enveloped & line.isNull(), F.lit(UNKNOWN))
    else:
        problem = F.when(~enveloped | line.isNull(), F.lit(UNKNOWN))
    return staged.select(
        "*",
        F.coalesce(line, value).alias("line"),
        F.regexp_replace(F.coalesce(instance, fallback_instance), "/", "_").alias("instance"),
        F.coalesce(F.nullif(F.element_at(F.split(path, "/"), -1), F.lit("")), F.col("topic")).alias("file_name"),
        problem.alias("envelope_problem"),
    ).drop("_json")


def lost_offsets(records: DataFrame, *, read_before: DataFrame) -> DataFrame:
    """One row per run of offsets a partition skipped (`topic`, `partition`, `first_lost`, `last_lost`): gaps
    between the records of this batch, and before its first record when `read_before` (`topic`, `partition`,
    `last_offset`: the newest offset ingested earlier) says where the partition stopped."""
    in_partition = Window.partitionBy("topic", "partition").orderBy("offset")
    prev = records.select("topic", "partition", "offset", F.lag("offset").over(in_partition).alias("_prev"))
    earlier = read_before.groupBy("topic", "partition").agg(F.max("last_offset").alias("_earlier"))
    prev = prev.join(F.broadcast(earlier), ["topic", "partition"], "left")
    before = F.coalesce(F.col("_prev"), F.col("_earlier"))
    return prev.filter(F.col("offset") - before > 1).select(
        "topic", "partition", (before + 1).alias("first_lost"), (F.col("offset") - 1).alias("last_lost")
    )


def kafka_raw_lines(records: DataFrame, *, envelope: str = "auto", read_before: DataFrame) -> DataFrame:
    """Kafka records to the raw lines of the ingest (`value`, `_metadata`, `torn`, `torn_reason`, `scan_id`,
    `kafka_topic`, `kafka_partition`, `kafka_offset`): one "file" per (topic, partition, instance, file) of the
    batch, its lines in offset order, plus one torn row per run of lost offsets."""
    fields = with_envelope_fields(records, envelope=envelope)
    gaps = lost_offsets(records, read_before=read_before).select(
        "topic", "partition", F.col("last_lost").alias("offset"), F.lit(None).cast("timestamp").alias("timestamp"),
        F.format_string("kafka topic %s partition %d: offsets %d..%d (%d records) were deleted before they were "
                        "read (retention); they are lost", "topic", "partition", "first_lost", "last_lost",
                        F.col("last_lost") - F.col("first_lost") + 1).alias("line"),
        F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")).alias("instance"),
        F.lit("lost-offsets").alias("file_name"), F.lit(LOST).alias("envelope_problem"),
    )
    lines = fields.select(*gaps.columns).unionByName(gaps)
    chunk = Window.partitionBy("topic", "partition", "instance", "file_name")
    lines = lines.withColumns({
        "_first": F.min("offset").over(chunk),
        "_modified": F.min("timestamp").over(chunk),
        "scan_id": F.row_number().over(chunk.orderBy("offset")).cast("long"),
    })
    path = F.format_string("kafka:/%s/%d/%s/%s@%d", "topic", "partition", "instance", "file_name", "_first")
    metadata = F.struct(path.alias("file_path"), F.col("file_name"),
                        F.coalesce("_modified", F.timestamp_seconds(F.lit(0))).alias("file_modification_time"),
                        F.lit(0).cast("long").alias("file_block_start"))
    return lines.select(
        F.col("line").alias("value"), metadata.alias("_metadata"), F.col("envelope_problem").isNotNull().alias("torn"),
        F.col("envelope_problem").alias("torn_reason"), "scan_id", F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"), F.col("offset").alias("kafka_offset"),
    )
