"""Kafka's wording per version: broker classic group coordinator (Scala) and Java consumer lines.

The strings of the simulated versions were checked against Kafka's source at the tags 2.4.0, 2.8.0 and 3.6.0; the
boundaries in between follow shared/kafka-logs/catalog.md. Client lines are (level, logger, thread, message) with
thread POLL (the application's poll thread) or HB (the consumer's heartbeat thread).
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.simulate.javautil import OFFSETS_TOPIC, hash_order, string_hash, topic_partition_hash

POLL = "poll"
HB = "hb"

GROUP_COORDINATOR = "kafka.coordinator.group.GroupCoordinator"
GROUP_METADATA_MANAGER = "kafka.coordinator.group.GroupMetadataManager"
GROUP_METADATA = "kafka.coordinator.group.GroupMetadata$"

_INTERNALS = "org.apache.kafka.clients.consumer.internals."
CONSUMER_COORDINATOR = _INTERNALS + "ConsumerCoordinator"
ABSTRACT_COORDINATOR = _INTERNALS + "AbstractCoordinator"
KAFKA_CONSUMER = "org.apache.kafka.clients.consumer.KafkaConsumer"
METADATA = "org.apache.kafka.clients.Metadata"
NETWORK_CLIENT = "org.apache.kafka.clients.NetworkClient"
APP_INFO = "org.apache.kafka.common.utils.AppInfoParser"
# AbstractConfig.logAll logs through getClass()'s logger before 4.0 (through AbstractConfig's own from 4.0)
CONSUMER_CONFIG = "org.apache.kafka.clients.consumer.ConsumerConfig"
METRICS = "org.apache.kafka.common.metrics.Metrics"

# the release each simulated version reports, with its build commit id (first 16 hex digits of the tag commit)
RELEASES = {
    "2.4": ("2.4.1", "c57222ae8cd7866b"), "2.8": ("2.8.2", "3146c6ff4a24cc24"), "3.6": ("3.6.1", "5e3c2b738d253ff5"),
}

POLL_TIMEOUT_TEXT = (
    "consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the "
    "configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing "
    "messages. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of "
    "batches returned in poll() with max.poll.records."
)
COMMIT_FAILED_TEXT = (
    "Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member. "
    "This means that the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, "
    "which typically implies that the poll loop is spending too much time message processing. You can address this "
    "either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with "
    "max.poll.records."
)
MEMBER_ID_REQUIRED_TEXT = "The group member needs to have a valid member id before actually entering a consumer group."
CLOSING = "the consumer is being closed"

ClientLine = tuple[str, str, str, str]


def coordinator_node(broker: int) -> str:
    """How the client prints the coordinator Node (id = Integer.MAX_VALUE - broker id)."""
    return f"broker-{broker}:9092 (id: {2147483647 - broker} rack: null)"


def broker_node(broker: int) -> str:
    """How the client prints a regular broker Node."""
    return f"broker-{broker}:9092 (id: {broker} rack: null)"


class Wording:
    """Log text of one Kafka version (2.4, 2.8 or 3.6; brokers and clients of the same version)."""

    def __init__(self, version: str) -> None:
        if version not in RELEASES:
            raise ValueError(f"kafka_version {version!r} is not simulated; choose one of {sorted(RELEASES)}")
        self.version = version
        self.v = tuple(int(x) for x in version.split("."))
        self.release, self.commit_id = RELEASES[version]
        self.ac_logger = CONSUMER_COORDINATOR if self.v >= (3, 0) else ABSTRACT_COORDINATOR
        self.protocols = "List(range, cooperative-sticky)" if self.v >= (3, 0) else "List(range)"
        # the default partition.assignment.strategy (Class objects, so printed `class ...`); 3.0+ lists the
        # cooperative assignor second, and a group of such members still agrees on eager `range` (KIP-429 step 1)
        assignors = ("RangeAssignor", "CooperativeStickyAssignor") if self.v >= (3, 0) else ("RangeAssignor",)
        self.assignment_strategy = "[" + ", ".join(f"class {_CONSUMER_PACKAGE}{a}" for a in assignors) + "]"
        self._config_defaults = _consumer_config_defaults(self.v)

    # ---- broker: classic group coordinator -------------------------------------------------------------------

    def member_metadata(self, member_id: str, client_id: str, host: str, session_ms: int, rebalance_ms: int) -> str:
        trailer = "" if self.v >= (3, 0) else ", "
        return (f"MemberMetadata(memberId={member_id}, groupInstanceId=None, clientId={client_id}, clientHost=/{host}, "
                f"sessionTimeoutMs={session_ms}, rebalanceTimeoutMs={rebalance_ms}, "
                f"supportedProtocols={self.protocols}{trailer})")

    def preparing(self, group: str, generation: int, partition: int, reason: str) -> str:
        return (f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {generation} "
                f"({OFFSETS_TOPIC}-{partition}) (reason: {reason})")

    def stabilized(self, group: str, generation: int, partition: int, size: int) -> str:
        text = f"Stabilized group {group} generation {generation} ({OFFSETS_TOPIC}-{partition})"
        return text + (f" with {size} members" if self.v >= (2, 8) else "")

    def now_empty(self, group: str, generation: int, partition: int) -> str:
        return f"Group {group} with generation {generation} is now empty ({OFFSETS_TOPIC}-{partition})"

    def assignment_received(self, leader: str, group: str, generation: int, size: int) -> str:
        if self.v < (2, 8):
            return f"Assignment received from leader for group {group} for generation {generation}"
        who = f"leader {leader}" if self.v >= (3, 0) else "leader"
        return (f"Assignment received from {who} for group {group} for generation {generation}. "
                f"The group has {size} members, 0 of which are static.")

    def unknown_member_joins(self, group: str, state: str, new_member_id: str) -> str | None:
        """KIP-394 step one; INFO only from 3.0 (DEBUG before)."""
        if self.v < (3, 0):
            return None
        return (f"Dynamic member with unknown member id joins group {group} in {state} state. Created a new member id "
                f"{new_member_id} and request the member to rejoin with this id.")

    def reason_add(self, member_id: str, client_reason: str) -> str:
        if self.v >= (3, 2):
            return f"Adding new member {member_id} with group instance id None; client reason: {client_reason}"
        if self.v >= (2, 5):
            return f"Adding new member {member_id} with group instance id None"
        return f"Adding new member {member_id} with group instanceid None"

    def reason_leader_rejoin(self, member_id: str, client_reason: str) -> str:
        if self.v >= (3, 2):
            return f"Leader {member_id} re-joining group during Stable; client reason: {client_reason}"
        if self.v >= (3, 0):
            return f"Leader {member_id} re-joining group during Stable"
        if self.v >= (2, 7):
            return f"leader {member_id} re-joining group during Stable"
        return f"Updating metadata for member {member_id}"

    def reason_expired(self, member_id: str) -> str:
        return f"removing member {member_id} on heartbeat expiration"

    def member_failed(self, member_id: str, group: str) -> str:
        return f"Member {member_id} in group {group} has failed, removing it from the group"

    def left_group(self, metadata: str, member_id: str, group: str,
                   leave_reason: str) -> tuple[str | None, str, str | None]:
        """(line before Preparing, Preparing reason, line after Preparing) of an explicit LeaveGroup."""
        if self.v >= (3, 2):
            after = (f"Member {metadata} has left group {group} through explicit `LeaveGroup`; "
                     f"client reason: {leave_reason}")
            return None, f"Removing member {member_id} on LeaveGroup; client reason: {leave_reason}", after
        before = (f"Member[group.instance.id None, member.id {member_id}] in group {group} has left, "
                  "removing it from the group")
        return before, f"removing member {member_id} on LeaveGroup", None

    def resigned(self, partition: int, epoch: int) -> str | None:
        if self.v < (2, 8):
            return None
        if self.v >= (3, 5):
            return f"Resigned as the group coordinator for partition {partition} in epoch OptionalInt[{epoch}]"
        if self.v >= (3, 0):
            return f"Resigned as the group coordinator for partition {partition} in epoch Some({epoch})"
        return f"Resigned as the group coordinator for partition {partition}"

    def elected(self, partition: int, epoch: int) -> str | None:
        if self.v < (2, 8):
            return None
        if self.v >= (3, 0):
            return f"Elected as the group coordinator for partition {partition} in epoch {epoch}"
        return f"Elected as the group coordinator for partition {partition}"

    def scheduling_unload(self, partition: int) -> str:
        return f"Scheduling unloading of offsets and group metadata from {OFFSETS_TOPIC}-{partition}"

    def unloading_group(self, group: str, generation: int) -> str:
        return f"Unloading group metadata for {group} with generation {generation}"

    def finished_unload(self, partition: int, epoch: int, offsets: int, groups: int) -> str:
        tp = f"{OFFSETS_TOPIC}-{partition}"
        if self.v >= (3, 0):
            shown = f"OptionalInt[{epoch}]" if self.v >= (3, 5) else f"Some({epoch})"
            return (f"Finished unloading {tp} for coordinator epoch {shown}. Removed {offsets} cached offsets and "
                    f"{groups} cached groups.")
        return f"Finished unloading {tp}. Removed {offsets} cached offsets and {groups} cached groups."

    def scheduling_load(self, partition: int, epoch: int) -> str:
        text = f"Scheduling loading of offsets and group metadata from {OFFSETS_TOPIC}-{partition}"
        return text + (f" for epoch {epoch}" if self.v >= (3, 0) else "")

    def loaded_member(self, metadata: str, group: str, generation: int) -> str | None:
        if self.v < (2, 8):
            return None
        return f"Loaded member {metadata} in group {group} with generation {generation}."

    def loading_group(self, group: str, generation: int) -> str:
        return f"Loading group metadata for {group} with generation {generation}"

    def finished_load(self, partition: int, epoch: int, total_ms: int, scheduler_ms: int) -> str:
        tp = f"{OFFSETS_TOPIC}-{partition}"
        if self.v >= (3, 0):
            return (f"Finished loading offsets and group metadata from {tp} in {total_ms} milliseconds for epoch "
                    f"{epoch}, of which {scheduler_ms} milliseconds was spent in the scheduler.")
        if self.v >= (2, 6):
            return (f"Finished loading offsets and group metadata from {tp} in {total_ms} milliseconds, of which "
                    f"{scheduler_ms} milliseconds was spent in the scheduler.")
        return f"Finished loading offsets and group metadata from {tp} in {total_ms} milliseconds."

    # ---- client: Java consumer, classic protocol ----------------------------------------------------------------

    def generation(self, generation: int, member_id: str) -> str:
        return f"Generation{{generationId={generation}, memberId='{member_id}', protocol='range'}}"

    def _ac(self, message: str, thread: str = POLL, level: str = "INFO") -> ClientLine:
        return level, self.ac_logger, thread, message

    def _cc(self, message: str, thread: str = POLL, level: str = "INFO") -> ClientLine:
        return level, CONSUMER_COORDINATOR, thread, message

    def request_rejoin(self, full_reason: str, thread: str = POLL) -> list[ClientLine]:
        return [self._ac(f"Request joining group due to: {full_reason}", thread)] if self.v >= (3, 0) else []

    def consumer_config(self, *, group_id: str, client_id: str, instance_id: str | None, session_ms: int,
                        heartbeat_ms: int, max_poll_ms: int, brokers: int,
                        group_protocol: str = "classic") -> ClientLine:
        """The `ConsumerConfig values: ` record new KafkaConsumer(...) logs before AppInfoParser's lines: one
        TAB-indented `key = value` line per setting, sorted by key, the message ending with a line break."""
        values = dict(self._config_defaults)
        values.update({
            "bootstrap.servers": "[" + ", ".join(f"broker-{b}:9092" for b in range(1, brokers + 1)) + "]",
            "client.id": client_id, "group.id": group_id, "session.timeout.ms": str(session_ms),
            "heartbeat.interval.ms": str(heartbeat_ms), "max.poll.interval.ms": str(max_poll_ms),
            "partition.assignment.strategy": self.assignment_strategy,
        })
        if self.v >= (2, 3):
            values["group.instance.id"] = instance_id or "null"
        if self.v >= (3, 7):
            values["group.protocol"] = group_protocol
        body = "".join(f"\t{key} = {values[key]}\n" for key in sorted(values))
        return "INFO", CONSUMER_CONFIG, POLL, f"ConsumerConfig values: \n{body}"

    def startup(self, topic: str, cluster_id: str, start_ms: int) -> list[ClientLine]:
        return [
            ("INFO", APP_INFO, POLL, f"Kafka version: {self.release}"),
            ("INFO", APP_INFO, POLL, f"Kafka commitId: {self.commit_id}"),
            ("INFO", APP_INFO, POLL, f"Kafka startTimeMs: {start_ms}"),
            ("INFO", KAFKA_CONSUMER, POLL, f"Subscribed to topic(s): {topic}"),
            ("INFO", METADATA, POLL, f"Cluster ID: {cluster_id}"),
        ]

    def discovered(self, broker: int, thread: str = POLL) -> ClientLine:
        return self._ac(f"Discovered group coordinator {coordinator_node(broker)}", thread)

    def rejoining(self) -> ClientLine:
        return self._ac("(Re-)joining group")

    def member_id_required(self, member_id: str) -> list[ClientLine]:
        """Lines after a MEMBER_ID_REQUIRED JoinGroup response, before the second JoinGroup; the JoinGroup reason."""
        lines = self.request_rejoin(f"need to re-join with the given member-id: {member_id}")
        if self.v >= (3, 2):
            failed = f"rebalance failed due to '{MEMBER_ID_REQUIRED_TEXT}' (MemberIdRequiredException)"
            lines += self.request_rejoin(failed)
        return [*lines, self.rejoining()]

    def new_member_client_reason(self) -> str:
        return "rebalance failed due to MemberIdRequiredException"

    def hb_rebalancing(self) -> list[ClientLine]:
        if self.v >= (3, 0):
            return self.request_rejoin("group is already rebalancing", HB)
        return [self._ac("Attempt to heartbeat failed since group is rebalancing", HB)]

    def revoke(self, topic: str, partitions: Sequence[int]) -> ClientLine:
        return self._cc(f"Revoke previously assigned partitions {self.partition_list(topic, partitions)}")

    def lost(self, topic: str, partitions: Sequence[int]) -> list[ClientLine]:
        if not partitions:
            return []
        if self.v >= (3, 2):
            giving = ("Giving away all assigned partitions as lost since generation/memberID has been reset,"
                      "indicating that consumer is in old state or no longer part of the group")
        else:
            giving = ("Giving away all assigned partitions as lost since generation has been reset,"
                      "indicating that consumer is no longer part of the group")
        lost = f"Lost previously assigned partitions {self.partition_list(topic, partitions)}"
        return [self._cc(giving), self._cc(lost)]

    def joined(self, generation: int, member_id: str) -> list[ClientLine]:
        """On the JoinGroup response (2.7+); older clients log it after SyncGroup, see synced()."""
        if self.v >= (2, 7):
            return [self._ac(f"Successfully joined group with generation {self.generation(generation, member_id)}")]
        return []

    def finished_assignment(self, generation: int, topic: str, assignment: dict[str, list[int]],
                            identity_hashes: Sequence[int]) -> ClientLine:
        members = list(assignment)
        order = hash_order([string_hash(m) for m in members])
        parts = []
        for i in order:
            if self.v >= (2, 5):
                value = "Assignment(partitions=[" + ", ".join(f"{topic}-{p}" for p in assignment[members[i]]) + "])"
            else:
                value = f"org.apache.kafka.clients.consumer.ConsumerPartitionAssignor$Assignment@{identity_hashes[i]:x}"
            parts.append(f"{members[i]}={value}")
        return self._cc(f"Finished assignment for group at generation {generation}: {{{', '.join(parts)}}}")

    def synced(self, generation: int, member_id: str, topic: str, partitions: Sequence[int]) -> list[ClientLine]:
        lines: list[ClientLine] = []
        if self.v >= (2, 7):
            lines.append(self._ac(f"Successfully synced group in generation {self.generation(generation, member_id)}"))
        else:
            lines.append(self._ac(f"Successfully joined group with generation {generation}"))
        if self.v >= (2, 6):
            shown = ", ".join(f"{topic}-{p}" for p in partitions)
            lines.append(self._cc(f"Notifying assignor about the new Assignment(partitions=[{shown}])"))
        lines.append(self._cc(f"Adding newly assigned partitions: {self.partition_list(topic, partitions)}"))
        return lines

    def setting_offset(self, topic: str, partition: int, offset: int, epoch: int, leader: int) -> ClientLine:
        node = broker_node(leader) if self.v < (2, 5) else f"Optional[{broker_node(leader)}]"
        position = (f"FetchPosition{{offset={offset}, offsetEpoch=Optional[{epoch}], "
                    f"currentLeader=LeaderAndEpoch{{leader={node}, epoch={epoch}}}}}")
        return self._cc(f"Setting offset for partition {topic}-{partition} to the committed offset {position}")

    def partition_list(self, topic: str, partitions: Sequence[int]) -> str:
        """Utils.join of a partition set: sorted (TreeSet) from 3.0, java.util.HashSet order before."""
        ordered = sorted(partitions)
        if self.v < (3, 0):
            order = hash_order([topic_partition_hash(topic, p) for p in ordered])
            ordered = [ordered[i] for i in order]
        return ", ".join(f"{topic}-{p}" for p in ordered)

    def leave(self, member_id: str, broker: int, reason: str, thread: str) -> list[ClientLine]:
        lines = [self._ac(f"Member {member_id} sending LeaveGroup request to coordinator {coordinator_node(broker)} "
                          f"due to {reason}", thread)]
        reason = "consumer pro-actively leaving the group"
        if self.v >= (3, 2):
            lines.append(self._ac(f"Resetting generation and member id due to: {reason}", thread))
        elif self.v >= (3, 0):
            lines.append(self._ac(f"Resetting generation due to: {reason}", thread))
        return lines + self.request_rejoin(reason, thread)

    def poll_timeout(self, member_id: str, broker: int) -> list[ClientLine]:
        if self.v >= (3, 0):
            leave = self.leave(member_id, broker, "consumer poll timeout has expired.", HB)
            return [self._ac(POLL_TIMEOUT_TEXT, HB, "WARN"), *leave]
        return self.leave(member_id, broker, POLL_TIMEOUT_TEXT, HB)

    def poll_timeout_leave_reason(self) -> str:
        return "consumer poll timeout has expired." if self.v >= (3, 0) else POLL_TIMEOUT_TEXT[:255]

    def coordinator_unavailable(self, broker: int, cause: str, disconnected: bool,
                                thread: str = HB) -> list[ClientLine]:
        node = coordinator_node(broker)
        flag = "true" if disconnected else "false"
        if self.v >= (3, 3):
            text = (f"Group coordinator {node} is unavailable or invalid due to cause: {cause}. "
                    f"isDisconnected: {flag}. Rediscovery will be attempted.")
        elif self.v >= (2, 7):
            text = (f"Group coordinator {node} is unavailable or invalid due to cause: {cause}.isDisconnected: {flag}. "
                    "Rediscovery will be attempted.")
        else:
            text = f"Group coordinator {node} is unavailable or invalid, will attempt rediscovery"
        lines = [self._ac(text, thread)]
        if self.v >= (3, 1) and not disconnected:
            lines.append(self._ac(f"Requesting disconnect from last known coordinator {node}", thread))
        return lines

    def hb_not_coordinator(self, broker: int) -> list[ClientLine]:
        dot = "." if self.v < (2, 5) else ""
        text = (f"Attempt to heartbeat failed since coordinator {coordinator_node(broker)} is either not started or "
                f"not valid{dot}")
        return [self._ac(text, HB), *self.coordinator_unavailable(broker, "error response NOT_COORDINATOR", False)]

    def hb_unknown_member(self, generation: int, member_id: str) -> list[ClientLine]:
        if self.v < (2, 6):
            return [self._ac(f"Attempt to heartbeat failed for since member id {member_id} is not valid.", HB)]
        lines = [self._ac(f"Attempt to heartbeat with {self.generation(generation, member_id)} and group instance id "
                          "Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation", HB)]
        reason = "encountered UNKNOWN_MEMBER_ID from HEARTBEAT response"
        if self.v >= (3, 2):
            lines.append(self._ac(f"Resetting generation and member id due to: {reason}", HB))
        elif self.v >= (3, 0):
            lines.append(self._ac(f"Resetting generation due to: {reason}", HB))
        return lines + self.request_rejoin(reason, HB)

    def connection_failed(self, broker: int, ip: str) -> ClientLine:
        message = (f"Connection to node {2147483647 - broker} (broker-{broker}/{ip}:9092) could not be established. "
                   "Broker may not be available.")
        return "WARN", NETWORK_CLIENT, HB, message

    def metadata_changed(self, topic: str, old_version: int, old_count: int, new_version: int,
                         new_count: int) -> list[ClientLine]:
        if self.v >= (3, 5):
            old = f"(version{old_version}: {{{topic}=[{', '.join(['NO_RACKS'] * old_count)}]}})"
            new = f"(version{new_version}: {{{topic}=[{', '.join(['NO_RACKS'] * new_count)}]}})"
        else:
            old = f"(version{old_version}: {{{topic}={old_count}}})"
            new = f"(version{new_version}: {{{topic}={new_count}}})"
        if self.v >= (3, 0):
            return self.request_rejoin(f"cached metadata has changed from {old} at the beginning of the rebalance "
                                       f"to {new}")
        if self.v >= (2, 7):
            return [self._cc("Requesting to re-join the group and trigger rebalance since the assignment metadata has "
                             f"changed from {old} to {new}")]
        return []

    def failing_commit(self) -> ClientLine:
        return self._cc("Failing OffsetCommit request since the consumer is not part of an active group")

    def closed(self, client_id: str) -> list[ClientLine]:
        lines: list[ClientLine] = [
            ("INFO", METRICS, POLL, "Metrics scheduler closed"),
            ("INFO", METRICS, POLL, "Closing reporter org.apache.kafka.common.metrics.JmxReporter"),
            ("INFO", METRICS, POLL, "Metrics reporters closed"),
        ]
        if self.v >= (2, 7):
            lines.append(("INFO", APP_INFO, POLL, f"App info kafka.consumer for {client_id} unregistered"))
        return lines


_CONSUMER_PACKAGE = "org.apache.kafka.clients.consumer."
_STRING_DESERIALIZER = "class org.apache.kafka.common.serialization.StringDeserializer"


def _consumer_config_defaults(v: tuple[int, ...]) -> dict[str, str]:
    """The settings a simulated service leaves at their defaults (or sets the same way everywhere), as
    ConsumerConfig prints them in release `v`; the group's own settings are added by Wording.consumer_config."""
    values = {
        "allow.auto.create.topics": "true", "auto.commit.interval.ms": "5000", "auto.offset.reset": "earliest",
        "check.crcs": "true", "client.dns.lookup": "use_all_dns_ips" if v >= (2, 6) else "default", "client.rack": "",
        "connections.max.idle.ms": "540000", "default.api.timeout.ms": "60000", "enable.auto.commit": "false",
        "exclude.internal.topics": "true", "fetch.max.bytes": "52428800", "fetch.max.wait.ms": "500",
        "fetch.min.bytes": "1", "interceptor.classes": "[]", "internal.leave.group.on.close": "true",
        "isolation.level": "read_uncommitted", "key.deserializer": _STRING_DESERIALIZER,
        "max.partition.fetch.bytes": "1048576", "max.poll.records": "500", "metadata.max.age.ms": "300000",
        "metric.reporters": "[]", "metrics.num.samples": "2", "metrics.recording.level": "INFO",
        "metrics.sample.window.ms": "30000", "receive.buffer.bytes": "65536", "reconnect.backoff.max.ms": "1000",
        "reconnect.backoff.ms": "50", "request.timeout.ms": "30000", "retry.backoff.ms": "100",
        "sasl.client.callback.handler.class": "null", "sasl.jaas.config": "null",
        "sasl.kerberos.kinit.cmd": "/usr/bin/kinit", "sasl.kerberos.min.time.before.relogin": "60000",
        "sasl.kerberos.service.name": "null", "sasl.kerberos.ticket.renew.jitter": "0.05",
        "sasl.kerberos.ticket.renew.window.factor": "0.8", "sasl.login.callback.handler.class": "null",
        "sasl.login.class": "null", "sasl.login.refresh.buffer.seconds": "300",
        "sasl.login.refresh.min.period.seconds": "60", "sasl.login.refresh.window.factor": "0.8",
        "sasl.login.refresh.window.jitter": "0.05", "sasl.mechanism": "GSSAPI", "security.protocol": "PLAINTEXT",
        "security.providers": "null", "send.buffer.bytes": "131072", "ssl.cipher.suites": "null",
        "ssl.enabled.protocols": "[TLSv1.2, TLSv1.3]" if v >= (2, 5) else "[TLSv1.2, TLSv1.1, TLSv1]",
        "ssl.endpoint.identification.algorithm": "https", "ssl.key.password": "null",
        "ssl.keymanager.algorithm": "SunX509", "ssl.keystore.location": "null", "ssl.keystore.password": "null",
        "ssl.keystore.type": "JKS", "ssl.protocol": "TLSv1.3" if v >= (2, 5) else "TLS", "ssl.provider": "null",
        "ssl.secure.random.implementation": "null", "ssl.trustmanager.algorithm": "PKIX",
        "ssl.truststore.location": "null", "ssl.truststore.password": "null", "ssl.truststore.type": "JKS",
        "value.deserializer": _STRING_DESERIALIZER,
    }
    if v >= (2, 5):
        values["internal.throw.on.fetch.stable.offset.unsupported"] = "false"
    if v >= (2, 6):
        values["ssl.engine.factory.class"] = "null"
    if v >= (2, 7):
        values.update({"socket.connection.setup.timeout.ms": "10000",
                       "socket.connection.setup.timeout.max.ms": "30000" if v >= (2, 8) else "127000",
                       "ssl.keystore.certificate.chain": "null", "ssl.keystore.key": "null",
                       "ssl.truststore.certificates": "null"})
    if v >= (3, 1):
        values.update({
            "sasl.login.connect.timeout.ms": "null", "sasl.login.read.timeout.ms": "null",
            "sasl.login.retry.backoff.max.ms": "10000", "sasl.login.retry.backoff.ms": "100",
            "sasl.oauthbearer.clock.skew.seconds": "30", "sasl.oauthbearer.expected.audience": "null",
            "sasl.oauthbearer.expected.issuer": "null", "sasl.oauthbearer.jwks.endpoint.refresh.ms": "3600000",
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "10000",
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "100", "sasl.oauthbearer.jwks.endpoint.url": "null",
            "sasl.oauthbearer.scope.claim.name": "scope", "sasl.oauthbearer.sub.claim.name": "sub",
            "sasl.oauthbearer.token.endpoint.url": "null",
        })
    if v >= (3, 4):
        values["auto.include.jmx.reporter"] = "true"
    if v >= (3, 7):
        values.update({"enable.metrics.push": "true", "group.remote.assignor": "null", "retry.backoff.max.ms": "1000"})
    return values
