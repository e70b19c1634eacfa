"""One group's timeline from its events: rebalances with causes, state intervals and member sessions.

Pure Python over plain dicts (one per event, in time order) so it runs the same inside applyInPandas and in tests.
The replay's state is one value (replay_state.ReplayState: the members, the rebalance under way, the transitions so
far); the parts that read and change it are separate objects, each handed that state: broker.BrokerReplay (the
coordinator's log, classic protocol), epochs.EpochReplay (KIP-848 epoch bumps), client_only.ClientOnlyReplay (groups
whose coordinator's log is absent) and refine.CauseRefinement (causes refined with context). gaps.py adds the
generations a coordinator's log misses and its members' logs show; rows.py shapes the output rows.
"""

from __future__ import annotations

from typing import Any

from pipelines.gold.alternatives import cause_alternatives
from pipelines.gold.broker import BrokerReplay
from pipelines.gold.churn import churn_rows
from pipelines.gold.client_only import ClientOnlyReplay
from pipelines.gold.epochs import EpochReplay
from pipelines.gold.gaps import fill_coordinator_gaps
from pipelines.gold.kinds import client_kind_of, client_kinds, group_type
from pipelines.gold.records import RebalanceRow, Step, TimelineEvent
from pipelines.gold.refine import CauseRefinement
from pipelines.gold.replay_state import ReplayState, Rules, stable_id
from pipelines.gold.rows import assign_incidents, rebalance_row, state_rows
from pipelines.gold.whatif import WhatIf, whatif_rows

__all__ = ["Rules", "Timeline", "is_share_group", "reconstruct_group", "stable_id"]


class Timeline:
    """Replays one group's events; `rebalances`, `states`, `sessions`, `churn` and `whatif` hold the resulting rows."""

    def __init__(self, group_id: str, events: list[TimelineEvent], rules: Rules | None = None, *,
                 trace: bool = False) -> None:
        self.state = state = ReplayState(group_id, events, rules, trace=trace)
        self.group_id, self.rules, self.ctx, self.tracing = group_id, state.rules, state.ctx, trace
        self.group_type = group_type(events)
        self._events = events
        refinement = CauseRefinement(state)
        self._broker = BrokerReplay(state, refinement, EpochReplay(state, refinement))
        self.churn: list[dict[str, Any]] = []
        self.whatif: list[dict[str, Any]] = []
        # Per rebalance id, the rules consulted in order (filled only when `trace`; see `rebalance explain`).
        self.traces: dict[str, list[Step]] = {}
        if is_share_group(events):
            self._share_sessions(events)
            self._label_sessions()
            return
        has_broker = False
        for event in events:
            if event.get("source_kind") == "broker":
                has_broker = True
                self._broker.on_event(event)
        if has_broker and state.targets and not state.bumps:
            self._broker.epochs.target_only_epochs(events)
        if not has_broker:
            # Only the members' logs were landed: rebuild the rebalances from their joins (never mixed with broker
            # evidence, so results with broker logs stay as they are).
            ClientOnlyReplay(state).replay([e for e in events if e.get("source_kind") == "client"])
        self._has_broker = has_broker
        self._finish()

    @property
    def rebalances(self) -> list[RebalanceRow]:
        """gold_rebalances rows of the group."""
        return self.state.rebalances

    @property
    def states(self) -> list[dict[str, Any]]:
        """gold_group_states rows of the group."""
        return self.state.states

    @property
    def sessions(self) -> dict[str, dict[str, Any]]:
        """gold_member_sessions rows of the group, by member id."""
        return self.state.sessions

    def _finish(self) -> None:
        self._broker.flush_implied()
        current = self.state.current
        if current is not None:
            if current.stabilized_at is not None:
                self.rebalances.append(rebalance_row(self.group_id, current, completed_at=current.stabilized_at,
                                                     outcome="stabilized"))
            else:
                self.rebalances.append(rebalance_row(self.group_id, current, completed_at=None, outcome="open"))
        if self._has_broker:
            # Generations the members joined that the coordinator's lines never account for (its log has a hole).
            self.rebalances.extend(fill_coordinator_gaps(
                self.rebalances, self._events, self._client_only_rows))
        assign_incidents(self.rebalances, gap_s=self.rules.incident_gap_s)
        self.states.extend(state_rows(self.group_id, self.state.transitions, self.rebalances))
        for row in self.rebalances:
            row["group_type"] = self.group_type
            row["cause_alternatives"] = cause_alternatives(row, self.ctx, has_broker=self._has_broker)
            self.traces[row["rebalance_id"]] = row.pop("_trace", [])
        self.churn = churn_rows(self.group_id, self._events, self.rebalances, self.sessions.values())
        self.whatif = whatif_rows(self.what_if())
        self._label_sessions()

    def _client_only_rows(self, clients: list[TimelineEvent]) -> list[RebalanceRow]:
        """The group's rebalances rebuilt from its members' lines alone, each with its trace (`_trace`)."""
        rebuilt = Timeline(self.group_id, clients, self.rules, trace=self.tracing)
        return [{**row, "_trace": rebuilt.traces.get(row["rebalance_id"], [])} for row in rebuilt.rebalances]

    def what_if(self) -> WhatIf:
        """The group's history, ready to be weighed under changed settings (pipelines/gold/whatif.py)."""
        return WhatIf(self.group_id, self.rebalances, self.churn, self._events, self.ctx, rules=self.rules)

    def _label_sessions(self) -> None:
        by_instance = client_kinds(self._events)
        for session in self.sessions.values():
            session["client_kind"] = client_kind_of(session, by_instance, self.group_type)
            session["group_type"] = self.group_type

    def _share_sessions(self, events: list[TimelineEvent]) -> None:
        """A share group's members, from its coordinator's joins, leaves and fences: sessions, and nothing else."""
        for event in events:
            member = event.get("member_id")
            if event.get("source_kind") != "broker" or not member:
                continue
            kind = event["event_type"]
            if kind == "share_member_joined":
                self.state.join(member, event)
            elif kind == "share_member_left":
                self.state.leave(member, event["event_ts"], "left")
            elif kind == "member_fenced":
                self.state.leave(member, event["event_ts"], "expired")


def is_share_group(events: list[TimelineEvent]) -> bool:
    """A share group (KIP-932) hands records out to its members one by one: a member joining or leaving never stops
    the others, so nothing in its history is a rebalance. Any share-group line marks one (its fence wording is the
    consumer groups' own, so the group's other lines must tell)."""
    return any(str(e.get("event_type") or "").startswith("share_") for e in events)


def reconstruct_group(group_id: str, events: list[TimelineEvent], rules: Rules | None = None) -> list[RebalanceRow]:
    """The rebalances of one group (rows shaped like gold_rebalances, evidence as `evidence_json`)."""
    return Timeline(group_id, events, rules).rebalances
