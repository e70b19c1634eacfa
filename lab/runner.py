"""One lab run for one Kafka version: fetch, start the cluster, run the scenarios, stop everything, write the truth."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab.catalog import SCENARIOS
from lab.cluster import Cluster
from lab.engine import Lab, write_truth
from lab.fetch import fetch
from lab.procs import REGISTRY, LabError, ScenarioSkipError, UsageError, install_cleanup
from lab.scenarios import Scenario


@dataclass
class RunResult:
    """What a version's run did: where its output is, which scenarios passed, how long it took."""

    version: str
    out: str
    seconds: float = 0.0
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    skip_reasons: dict[str, str] = field(default_factory=dict)
    scenario_seconds: dict[str, float] = field(default_factory=dict)
    truth_rows: int = 0
    unlabelled: list[tuple[str, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unlabelled


def select(names: list[str] | None, *, short: bool, major: int,
           client: str | None = None) -> tuple[list[Scenario], list[str]]:
    """The scenarios to run on a Kafka major (all, the short set, or by name; only those of one client kind when
    `client` says so) and the names left out."""
    known = {s.name for s in SCENARIOS}
    unknown = set(names or []) - known
    if unknown:
        raise UsageError(f"unknown scenario(s) {sorted(unknown)}; known: {sorted(known)}")
    kinds = {s.client for s in SCENARIOS}
    if client is not None and client not in kinds:
        raise UsageError(f"unknown client kind {client!r}; known: {sorted(kinds)}")
    chosen, skipped = [], []
    for s in SCENARIOS:
        if client is not None and s.client != client:
            continue
        wanted = (s.name in names) if names else (s.short or not short)
        if wanted and major in s.majors:
            chosen.append(s)
        elif wanted:
            skipped.append(s.name)
    return chosen, skipped


def run_version(spec: str, *, out: Path, names: list[str] | None = None, short: bool = False,
                client: str | None = None, keep_work: bool = False, progress=print) -> RunResult:
    """Run the lab for one Kafka version into out/<version>/ (landing/, truth/, lab-run.json)."""
    install_cleanup()
    started = time.time()
    kit = fetch(spec, progress=progress)
    chosen, skipped = select(names, short=short, major=kit.major, client=client)
    target = out / kit.version
    shutil.rmtree(target, ignore_errors=True)
    (target / "landing").mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix=f"kafka-lab-{kit.version}-"))
    result = RunResult(version=kit.version, out=str(target), skipped=skipped)
    cluster = Cluster(kit, landing=target / "landing", work=work, progress=progress)
    lab = Lab(cluster, progress=progress)
    try:
        cluster.start()
        progress(f"kafka {kit.version}: cluster up in {time.time() - started:.0f} s")
        for scenario in chosen:
            t0 = time.time()
            lab.scenario = scenario.name
            progress(f"scenario {scenario.name}")
            try:
                scenario.run(lab)
                result.passed.append(scenario.name)
            except ScenarioSkipError as exc:
                progress(f"scenario {scenario.name} skipped: {exc}")
                result.skipped.append(scenario.name)
                result.skip_reasons[scenario.name] = str(exc)
                lab.stop_members()
            except LabError as exc:
                progress(f"scenario {scenario.name} FAILED: {exc}")
                result.failed[scenario.name] = str(exc)
                lab.stop_members()
            result.scenario_seconds[scenario.name] = round(time.time() - t0, 1)
        result.unlabelled = lab.unlabelled()
    finally:
        lab.stop_members()
        cluster.stop()
        REGISTRY.stop_all()
        if keep_work:
            progress(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    write_truth(lab.truth, target / "truth" / "rebalances.jsonl")
    if lab.estate_truth:
        write_truth(lab.estate_truth, target / "truth" / "estate_incidents.jsonl")
    result.truth_rows = len(lab.truth)
    result.seconds = round(time.time() - started, 1)
    (target / "lab-run.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    return result
