"""Kafka's wording per version: broker group coordinator and Java consumer lines.

The strings of 2.4, 2.8 and 3.6 were checked against Kafka's source at the tags 2.4.0, 2.8.0 and 3.6.0; the
boundaries in between follow shared/kafka-logs/catalog.md. 4.1's strings (the new group coordinator of KIP-848 for
classic and consumer groups, the classic and the KIP-848 Java consumer) are copied from the real 4.1.2 brokers and
clients of the lab run (tests/data/kafka-lab/4.1.2, lab/WORDINGS.md). Client lines are (level, logger, thread,
message) with thread POLL (the application's poll thread) or HB (the classic consumer's heartbeat thread, the KIP-848
consumer's background thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from simulator.javautil import OFFSETS_TOPIC, hash_order, string_hash, topic_partition_hash

POLL = "poll"
HB = "hb"

GROUP_COORDINATOR = "kafka.coordinator.group.GroupCoordinator"
GROUP_METADATA_MANAGER = "kafka.coordinator.group.GroupMetadataManager"
GROUP_METADATA = "kafka.coordinator.group.GroupMetadata$"
# the new group coordinator (4.0+ for every group): one logger, a `[GroupCoordinator id=B topic=T partition=P] ` prefix
NEW_GROUP_METADATA_MANAGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"

_INTERNALS = "org.apache.kafka.clients.consumer.internals."
CONSUMER_COORDINATOR = _INTERNALS + "ConsumerCoordinator"
ABSTRACT_COORDINATOR = _INTERNALS + "AbstractCoordinator"
KAFKA_CONSUMER = "org.apache.kafka.clients.consumer.KafkaConsumer"
METADATA = "org.apache.kafka.clients.Metadata"
NETWORK_CLIENT = "org.apache.kafka.clients.NetworkClient"
APP_INFO = "org.apache.kafka.common.utils.AppInfoParser"
# AbstractConfig.logAll logs through getClass()'s logger before 4.0 (through AbstractConfig's own from 4.0)
CONSUMER_CONFIG = "org.apache.kafka.clients.consumer.ConsumerConfig"
ABSTRACT_CONFIG = "org.apache.kafka.common.config.AbstractConfig"
# 4.x clients: the classic consumer's own class, the rebalance listener invoker, the KIP-848 consumer's managers
CLASSIC_KAFKA_CONSUMER = _INTERNALS + "ClassicKafkaConsumer"
ASYNC_KAFKA_CONSUMER = _INTERNALS + "AsyncKafkaConsumer"
LISTENER_INVOKER = _INTERNALS + "ConsumerRebalanceListenerInvoker"
CONSUMER_UTILS = _INTERNALS + "ConsumerUtils"
MEMBERSHIP_MANAGER = _INTERNALS + "ConsumerMembershipManager"
COORDINATOR_REQUEST_MANAGER = _INTERNALS + "CoordinatorRequestManager"
HEARTBEAT_REQUEST_MANAGER = _INTERNALS + "ConsumerHeartbeatRequestManager"
COMMIT_REQUEST_MANAGER = _INTERNALS + "CommitRequestManager"
METRICS = "org.apache.kafka.common.metrics.Metrics"

# the release each simulated version reports, with its build commit id (first 16 hex digits of the tag commit; 4.1.2's
# from kafka-version.properties in the kafka-clients-4.1.2 jar, since 4.x clients no longer log it at INFO)
RELEASES = {
    "2.4": ("2.4.1", "c57222ae8cd7866b"), "2.8": ("2.8.2", "3146c6ff4a24cc24"), "3.6": ("3.6.1", "5e3c2b738d253ff5"),
    "4.1": ("4.1.2", "c82fd9b934b4c1e6"),
}
GROUP_PROTOCOLS = ("classic", "consumer", "mixed")

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


def coordinator_node(broker: int, fenced_flag: bool = False) -> str:
    """How the client prints the coordinator Node (id = Integer.MAX_VALUE - broker id; 4.x adds isFenced)."""
    return f"broker-{broker}:9092 (id: {2147483647 - broker} rack: null{' isFenced: false' if fenced_flag else ''})"


def broker_node(broker: int, fenced_flag: bool = False) -> str:
    """How the client prints a regular broker Node."""
    return f"broker-{broker}:9092 (id: {broker} rack: null{' isFenced: false' if fenced_flag else ''})"


class Wording:
    """Log text of one Kafka version (2.4, 2.8, 3.6 or 4.1; brokers and clients of the same version)."""

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
        # 4.0 moved every group to the new coordinator and the consumer's Node rendering gained isFenced
        self.new_coordinator = self.v >= (4, 0)

    def coordinator(self, broker: int) -> str:
        return coordinator_node(broker, self.new_coordinator)

    # ---- broker: classic group coordinator -------------------------------------------------------------------

    def member_metadata(self, member_id: str, client_id: str, host: str, session_ms: int, rebalance_ms: int) -> str:
        trailer = "" if self.v >= (3, 0) else ", "
        return (f"MemberMetadata(memberId={member_id}, groupInstanceId=None, clientId={client_id}, clientHost=/{host}, "
                f"sessionTimeoutMs={session_ms}, rebalanceTimeoutMs={rebalance_ms}, "
                f"supportedProtocols={self.protocols}{trailer})")

    def preparing(self, group: str, generation: int, partition: int, reason: str) -> str:
        if self.new_coordinator:
            return (f"Preparing to rebalance group {group} in state PreparingRebalance with old generation "
                    f"{generation} (reason: {reason}).")
        return (f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {generation} "
                f"({OFFSETS_TOPIC}-{partition}) (reason: {reason})")

    def stabilized(self, group: str, generation: int, partition: int, size: int) -> str:
        if self.new_coordinator:
            return f"Stabilized group {group} generation {generation} with {size} members."
        text = f"Stabilized group {group} generation {generation} ({OFFSETS_TOPIC}-{partition})"
        return text + (f" with {size} members" if self.v >= (2, 8) else "")

    def now_empty(self, group: str, generation: int, partition: int) -> str:
        if self.new_coordinator:
            return f"Group {group} with generation {generation} is now empty."
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
        verb = "requesting" if self.new_coordinator else "request"
        return (f"Dynamic member with unknown member id joins group {group} in {state} state. Created a new member id "
                f"{new_member_id} and {verb} the member to rejoin with this id.")

    def pending_member_joins(self, group: str, state: str, member_id: str) -> str | None:
        """KIP-394 step two; the new coordinator logs it at INFO."""
        if not self.new_coordinator:
            return None
        return (f"Pending dynamic member with id {member_id} joins group {group} in {state} state. "
                "Adding to the group now.")

    def reason_add(self, member_id: str, client_reason: str) -> str:
        if self.new_coordinator:
            return f"Adding new member {member_id} with group instance id null; client reason: {client_reason}"
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
        return f"removing member {member_id} on heartbeat expiration" + ("." if self.new_coordinator else "")

    def member_failed(self, member_id: str, group: str) -> str:
        return (f"Member {member_id} in group {group} has failed, removing it from the group"
                + ("." if self.new_coordinator else ""))

    def left_group(self, metadata: str, member_id: str, group: str,
                   leave_reason: str) -> tuple[str | None, str, str | None]:
        """(line before Preparing, Preparing reason, line after Preparing) of an explicit LeaveGroup."""
        if self.new_coordinator:
            before = (f"[Group {group}] Member {member_id} has left group through explicit `LeaveGroup` request; "
                      f"client reason: {leave_reason}")
            return before, f"explicit `LeaveGroup` request for ({member_id}) members.", None
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
        logger = ABSTRACT_CONFIG if self.v >= (4, 0) else CONSUMER_CONFIG
        return "INFO", logger, POLL, f"ConsumerConfig values: \n{body}"

    def startup(self, topic: str, cluster_id: str, start_ms: int) -> list[ClientLine]:
        """A classic consumer's lines after its ConsumerConfig record (4.x logs neither commitId nor startTimeMs)."""
        if self.v >= (4, 0):
            return [
                ("INFO", APP_INFO, POLL, f"Kafka version: {self.release}"),
                ("INFO", CLASSIC_KAFKA_CONSUMER, POLL, f"Subscribed to topic(s): {topic}"),
                ("INFO", METADATA, POLL, f"Cluster ID: {cluster_id}"),
            ]
        return [
            ("INFO", APP_INFO, POLL, f"Kafka version: {self.release}"),
            ("INFO", APP_INFO, POLL, f"Kafka commitId: {self.commit_id}"),
            ("INFO", APP_INFO, POLL, f"Kafka startTimeMs: {start_ms}"),
            ("INFO", KAFKA_CONSUMER, POLL, f"Subscribed to topic(s): {topic}"),
            ("INFO", METADATA, POLL, f"Cluster ID: {cluster_id}"),
        ]

    def discovered(self, broker: int, thread: str = POLL) -> ClientLine:
        return self._ac(f"Discovered group coordinator {self.coordinator(broker)}", thread)

    def rejoining(self) -> ClientLine:
        return self._ac("(Re-)joining group")

    def member_id_required(self, member_id: str) -> list[ClientLine]:
        """Lines after a MEMBER_ID_REQUIRED JoinGroup response, before the second JoinGroup; the JoinGroup reason."""
        lines = self.request_rejoin(f"need to re-join with the given member-id: {member_id}")
        if (3, 2) <= self.v < (4, 0):
            failed = f"rebalance failed due to '{MEMBER_ID_REQUIRED_TEXT}' (MemberIdRequiredException)"
            lines += self.request_rejoin(failed)
        return [*lines, self.rejoining()]

    def new_member_client_reason(self, member_id: str) -> str:
        """The reason the second JoinGroup of a new member carries (the broker prints it as the client reason)."""
        if self.v >= (4, 0):
            return f"need to re-join with the given member-id: {member_id}"
        return "rebalance failed due to MemberIdRequiredException"

    def hb_rebalancing(self) -> list[ClientLine]:
        if self.v >= (3, 0):
            return self.request_rejoin("group is already rebalancing", HB)
        return [self._ac("Attempt to heartbeat failed since group is rebalancing", HB)]

    def _listener(self, message: str) -> ClientLine:
        """ConsumerCoordinator's rebalance-listener lines; 4.x logs them from ConsumerRebalanceListenerInvoker."""
        return ("INFO", LISTENER_INVOKER, POLL, message) if self.v >= (4, 0) else self._cc(message)

    def revoke(self, topic: str, partitions: Sequence[int]) -> ClientLine:
        return self._listener(f"Revoke previously assigned partitions {self.partition_list(topic, partitions)}")

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
        return [self._cc(giving), self._listener(lost)]

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
        lines.append(self._listener(f"Adding newly assigned partitions: {self.partition_list(topic, partitions)}"))
        return lines

    def setting_offset(self, topic: str, partition: int, offset: int, epoch: int, leader: int) -> ClientLine:
        node = broker_node(leader, self.new_coordinator)
        node = node if self.v < (2, 5) else f"Optional[{node}]"
        position = (f"FetchPosition{{offset={offset}, offsetEpoch=Optional[{epoch}], "
                    f"currentLeader=LeaderAndEpoch{{leader={node}, epoch={epoch}}}}}")
        message = f"Setting offset for partition {topic}-{partition} to the committed offset {position}"
        # 4.x logs it from ConsumerUtils, whose logger carries no LogContext prefix
        return ("INFO", CONSUMER_UTILS, POLL, message) if self.v >= (4, 0) else self._cc(message)

    def partition_list(self, topic: str, partitions: Sequence[int]) -> str:
        """Utils.join of a partition set: sorted (TreeSet) from 3.0, java.util.HashSet order before; 4.x prints the
        sorted set as a collection, in brackets."""
        ordered = sorted(partitions)
        if self.v < (3, 0):
            order = hash_order([topic_partition_hash(topic, p) for p in ordered])
            ordered = [ordered[i] for i in order]
        shown = ", ".join(f"{topic}-{p}" for p in ordered)
        return f"[{shown}]" if self.v >= (4, 0) else shown

    def leave(self, member_id: str, broker: int, reason: str, thread: str) -> list[ClientLine]:
        lines = [self._ac(f"Member {member_id} sending LeaveGroup request to coordinator {self.coordinator(broker)} "
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
        node = self.coordinator(broker)
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
        text = (f"Attempt to heartbeat failed since coordinator {self.coordinator(broker)} is either not started or "
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

    # ---- KIP-848 consumer groups (4.x): new coordinator and AsyncKafkaConsumer ----------------------------------

    def cg_member_joins(self, group: str, member_id: str) -> str:
        return f"[GroupId {group}] Member {member_id} joins the consumer group using the consumer protocol."

    def cg_member_left(self, group: str, member_id: str) -> str:
        return f"[GroupId {group}] Member {member_id} left the consumer group."

    def cg_member_fenced(self, group: str, member_id: str) -> str:
        return f"[GroupId {group}] Member {member_id} fenced from the group because the member session expired."

    def cg_epoch_bumped(self, group: str, epoch: int, metadata_hash: int) -> str:
        return f"[GroupId {group}] Bumped group epoch to {epoch} with metadata hash {metadata_hash}."

    def cg_target_computed(self, group: str, epoch: int, took_ms: int) -> str:
        return (f"[GroupId {group}] Computed a new target assignment for epoch {epoch} with 'uniform' assignor in "
                f"{took_ms}ms.")

    def async_subscribed(self, topic: str) -> ClientLine:
        return "INFO", ASYNC_KAFKA_CONSUMER, POLL, f"Subscribed to topic(s): {topic}"

    def cluster_id(self, cluster_id: str, thread: str = POLL) -> ClientLine:
        return "INFO", METADATA, thread, f"Cluster ID: {cluster_id}"

    def cg_discovered(self, group: str, broker: int) -> ClientLine:
        coordinator = (f"Coordinator(key='{group}', nodeId={broker}, host='broker-{broker}', port=9092, errorCode=0, "
                       "errorMessage='')")
        return "INFO", COORDINATOR_REQUEST_MANAGER, HB, f"Discovered group coordinator {coordinator}"

    def cg_transition(self, member_id: str, epoch: int, old: str, new: str) -> ClientLine:
        text = f"Member {member_id} with epoch {epoch} transitioned from {old} to {new}."
        return "INFO", MEMBERSHIP_MANAGER, HB, text

    def cg_reconciling(self, local_epoch: int, member_id: str, topic: str, assigned: Sequence[int],
                       owned: Sequence[int]) -> ClientLine:
        """The multi-line record the membership manager logs before it reconciles an assignment."""
        def shown(parts: Iterable[int]) -> str:
            return "[" + ", ".join(f"{topic}-{p}" for p in sorted(parts)) + "]"

        rows = [("Member:", member_id), ("Assigned partitions:", shown(assigned)),
                ("Current owned partitions:", shown(owned)),
                ("Added partitions (assigned - owned):", shown(set(assigned) - set(owned))),
                ("Revoked partitions (owned - assigned):", shown(set(owned) - set(assigned)))]
        body = "".join(f"\t{label:<43}{value}\n" for label, value in rows)
        return "INFO", MEMBERSHIP_MANAGER, HB, f"Reconciling assignment with local epoch {local_epoch}\n{body}"

    def cg_revoking(self, topic: str, partitions: Sequence[int]) -> ClientLine:
        """The membership manager's own revocation line lists a java.util.HashSet (hash order)."""
        ordered = sorted(partitions)
        order = hash_order([topic_partition_hash(topic, p) for p in ordered])
        shown = ", ".join(f"{topic}-{ordered[i]}" for i in order)
        return "INFO", MEMBERSHIP_MANAGER, HB, f"Revoking previously assigned partitions [{shown}]"

    def cg_assigned(self, topic: str, partitions: Sequence[int]) -> ClientLine:
        return self._listener(f"Adding newly assigned partitions: {self.partition_list(topic, partitions)}")

    def cg_lost(self, topic: str, partitions: Sequence[int]) -> ClientLine:
        return self._listener(f"Lost previously assigned partitions {self.partition_list(topic, partitions)}")

    def cg_leaving(self, member_id: str, epoch: int, old_state: str, final_state: str) -> list[ClientLine]:
        """The membership manager leaving the group (close: UNSUBSCRIBED at the end; poll timeout: STALE)."""
        text = (f"Member {member_id} won't include epoch in following offset commit/fetch requests because it has left "
                "the group.")
        return [self.cg_transition(member_id, epoch, old_state, "PREPARE_LEAVING"),
                ("INFO", COMMIT_REQUEST_MANAGER, HB, text),
                self.cg_transition(member_id, -1, "PREPARE_LEAVING", "LEAVING"),
                self.cg_transition(member_id, -1, "LEAVING", final_state)]

    def cg_completed_leaving(self) -> ClientLine:
        return "INFO", ASYNC_KAFKA_CONSUMER, POLL, "Completed leaving the group"

    def cg_poll_timeout(self) -> ClientLine:
        return "WARN", HEARTBEAT_REQUEST_MANAGER, HB, "C" + POLL_TIMEOUT_TEXT[1:]

    def cg_poll_resumed(self, exceeded_ms: int, member_id: str) -> ClientLine:
        text = ("Time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, exceeded "
                f"approximately by {exceeded_ms} ms. Member {member_id} will rejoin the group now.")
        return "WARN", HEARTBEAT_REQUEST_MANAGER, HB, text

    def failing_commit(self) -> ClientLine:
        return self._cc("Failing OffsetCommit request since the consumer is not part of an active group")

    def closed(self, client_id: str) -> list[ClientLine]:
        lines: list[ClientLine] = [
            ("INFO", METRICS, POLL, "Metrics scheduler closed"),
            ("INFO", METRICS, POLL, "Closing reporter org.apache.kafka.common.metrics.JmxReporter"),
        ]
        if self.v >= (4, 0):
            return lines
        lines.append(("INFO", METRICS, POLL, "Metrics reporters closed"))
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
    if (3, 4) <= v < (4, 0):
        values["auto.include.jmx.reporter"] = "true"
    if v >= (3, 7):
        values.update({"enable.metrics.push": "true", "group.remote.assignor": "null", "retry.backoff.max.ms": "1000"})
    if v >= (4, 0):
        # 4.0 dropped auto.include.jmx.reporter and made JmxReporter the default reporter; the rest is 4.1's
        values["metric.reporters"] = "[org.apache.kafka.common.metrics.JmxReporter]"
        values.update({"metadata.recovery.rebootstrap.trigger.ms": "300000",
                       "metadata.recovery.strategy": "rebootstrap", "share.acknowledgement.mode": "implicit",
                       "sasl.oauthbearer.assertion.algorithm": "RS256",
                       "sasl.oauthbearer.assertion.claim.exp.seconds": "300",
                       "sasl.oauthbearer.assertion.claim.jti.include": "false",
                       "sasl.oauthbearer.assertion.claim.nbf.seconds": "60",
                       "sasl.oauthbearer.header.urlencode": "false",
                       "sasl.oauthbearer.jwt.retriever.class":
                           "class org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
                       "sasl.oauthbearer.jwt.validator.class":
                           "class org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"})
        for key in ("assertion.claim.aud", "assertion.claim.iss", "assertion.claim.sub", "assertion.file",
                    "assertion.private.key.file", "assertion.private.key.passphrase", "assertion.template.file",
                    "client.credentials.client.id", "client.credentials.client.secret", "scope"):
            values[f"sasl.oauthbearer.{key}"] = "null"
    return values
