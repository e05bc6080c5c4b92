"""What `reasonrl repro` runs, in which order, and what each stage did — from DVC's own view.

- `stale_plan`: the stale stages the targets need (DVC's `plan_repro`), upstream first in DVC's order of the pipeline,
  from `_dvc_stages`, DVC's view as plain data (runner.dvc_adapter's `planned_stages`: DVC documents no public
  planner; tests/test_parallel.py pins what it returns). `dvc repro` finds a stage stale only when it reaches it, after
  its upstream reran; a runner that starts stages side by side must know the whole stale closure first.
- `Schedule`: among the ready stages, which to start next (reports first, then the critical path). What it buys,
  on the committed DAG at -j 2 (benchmarks/schedule.py, docs/runlogs/schedule_benchmark.txt: each stage its last
  timing file): six of the eleven results (report_zero, _methods, _hacking, _ablations, _headline, plots) at
  3.9-4.7 h instead of 8.1 h in `dvc repro`'s order, for the same 8 h 11 min in all. graphlib's
  TopologicalSorter would keep the ready set too, but not the waiting sets the priority reads.
- `stage_status`: whether a stage ran, was restored from the run-cache or was unchanged, from its
  dvc.lock entry and the run-cache entries (documented file formats), never from DVC's log text.
"""

from __future__ import annotations

import collections
import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from . import dvc_adapter

REPORT_PREFIX = "report"  # a stage named report... (the project's report_<study>) is a result


# ---- what to run ---------------------------------------------------------------------------------------


@dataclass
class Plan:
    root: str  # the repository root, where every `dvc repro -s` runs
    run_cache: str  # DVC's run-cache directory
    stages: dict[str, list[str]]  # stale stage -> its stale upstream stages; upstream first
    locks: dict[str, tuple[str, str]]  # stale stage -> (its dvc.lock, its key there)


def _dvc_stages(repo: str | None, targets: list[str]) -> tuple[str, str, list[tuple[str, list[str], bool, str]]]:
    """What DVC knows, as plain data: (root, run-cache directory, [(stage, upstream stages, changed,
    dvc.yaml path)] for every stage the targets need, upstream first), DVC's lock and params files read through
    the kept parse meanwhile (runner.lockfile). The stages are `dvc repro`'s, in its order of the whole pipeline (its
    order of a target's stages varies with the string hash seed), and as there the stages upstream of a frozen stage
    are not needed (runner.dvc_adapter's `planned_stages`; tests/test_parallel.py pins it).
    """
    from .lockfile import reading

    root = dvc_adapter.find_root(repo)
    with reading():
        run_cache, stages = dvc_adapter.planned_stages(root, targets)
    return root, run_cache, stages


def near_targets(repo: str | None, targets: list[str]) -> str:
    """' (did you mean a or b?)': the stage names of dvc.yaml closest to each target that names no stage there, so
    that a renamed stage points to its successors (`report_headline` to the per-task reports); '' where none is close
    or dvc.yaml cannot be read. Read only after DVC refused the targets: it costs nothing on a good command."""
    import difflib

    import yaml

    try:
        groups = list((yaml.safe_load((Path(repo or ".") / "dvc.yaml").read_text()) or {}).get("stages") or {})
    except (OSError, yaml.YAMLError, AttributeError):
        return ""
    near: list[str] = []
    for target in targets:
        name = target.rpartition(":")[2].partition("@")[0]  # dvc.yaml:<stage>@<key> names the stage group too
        if name and name not in groups:
            # a name that begins another stage's (a stage split in two) before the ones spelled alike
            near += [g for g in groups if g.startswith(name)] or difflib.get_close_matches(name, groups, 3, 0.8)
    return f" (did you mean {' or '.join(dict.fromkeys(near))}?)" if near else ""


def stale_plan(repo: str | None, targets: list[str]) -> Plan:
    """The stale stages the targets need. A stage is stale if DVC says it changed, or if any upstream
    stage is stale: before the upstream reruns, `dvc status` cannot see that the downstream stage's
    inputs are about to change.
    """
    root, run_cache, stages = _dvc_stages(repo, targets)
    plan = Plan(root, run_cache, {}, {})
    for stage, upstream, changed, dvcfile in stages:
        ups = [u for u in upstream if u in plan.stages]
        if ups or changed:
            plan.stages[stage] = ups
            # a foreach item is recorded as `name@item` in the dvc.lock beside its dvc.yaml
            plan.locks[stage] = (str(Path(dvcfile).with_suffix(".lock")), stage.rsplit(":", 1)[-1])
    return plan


class Schedule:
    """Which ready stage to start next: first one that completes a report (a stage named `report...`,
    or one nothing else in the plan waits for) or is one itself, then the one with the longest chain of
    stages waiting behind it (critical path first), then the plan's order."""

    def __init__(self, plan: dict[str, list[str]]):
        self.index = {stage: i for i, stage in enumerate(plan)}
        self.waiting = {stage: set(ups) for stage, ups in plan.items()}
        self.dependents: dict[str, list[str]] = collections.defaultdict(list)
        for stage, ups in plan.items():
            for up in ups:
                self.dependents[up].append(stage)
        self.depth: dict[str, int] = {}  # stages on the longest chain from here to the end, this one included
        for stage in reversed(list(plan)):
            self.depth[stage] = 1 + max((self.depth[d] for d in self.dependents[stage]), default=0)
        self.ready = [stage for stage, ups in plan.items() if not ups]

    def is_report(self, stage: str) -> bool:
        return stage.rsplit(":", 1)[-1].startswith(REPORT_PREFIX) or not self.dependents[stage]

    def priority(self, stage: str) -> tuple:
        completes = self.is_report(stage) or any(self.is_report(d) and self.waiting[d] == {stage}
                                                 for d in self.dependents[stage])
        return completes, self.depth[stage], -self.index[stage]

    def pop(self) -> str:
        """The ready stage to start now (removed from the ready ones)."""
        stage = max(self.ready, key=self.priority)
        self.ready.remove(stage)
        return stage

    def done(self, stage: str) -> None:
        for down in self.dependents[stage]:
            self.waiting[down].discard(stage)
            if not self.waiting[down]:
                self.ready.append(down)

    def failed(self, stage: str) -> list[str]:
        """Every stage that (transitively) depends on `stage`, each once: they will not run."""
        seen: dict[str, None] = {}
        todo = list(self.dependents[stage])
        while todo:
            down = todo.pop()
            if down not in seen:
                seen[down] = None
                todo.extend(self.dependents[down])
        return list(seen)

    def order(self) -> list[str]:
        """The order one worker would run every stage in, if none fails."""
        out = []
        while self.ready:
            out.append(self.pop())
            self.done(out[-1])
        return out


# ---- what a stage did, from DVC's files ----------------------------------------------------------------


def read_lock_entry(path: str, key: str) -> dict | None:
    """The stage's entry in dvc.lock (None if it has none). DVC rewrites dvc.lock in place when any
    stage finishes, so the file is read until two reads agree; the text is parsed once per version
    (reasonrl.runner.lockfile.parse_kept: the lock's kept parse)."""
    from .lockfile import parse_kept

    prev = None
    for _ in range(20):
        try:
            text = Path(path).read_text()
        except FileNotFoundError:
            text = ""
        if text == prev:
            break
        prev = text
        time.sleep(0.05)
    with contextlib.suppress(dvc_adapter.yaml_corrupted_error(), AttributeError, TypeError):
        return ((parse_kept(prev, path) if prev else None) or {}).get("stages", {}).get(key)
    return None


def run_cache_entries(run_cache: str) -> set[str]:
    """The run-cache's entries (files `<run_cache>/<key[:2]>/<key>/<value>`)."""
    return {os.path.join(d, f) for d, _, files in os.walk(run_cache) for f in files}


def _entry_is(path: str, entry: dict) -> bool:
    # A run-cache entry holds the same fields as the stage's dvc.lock entry (cmd, deps, params, outs).
    # The outputs' hashes appear verbatim in its YAML (a long cmd may be folded or escaped): only the files
    # that hold them all are parsed.
    from .lockfile import dvc_parse

    hashes = [str(o["md5"]) for o in entry.get("outs") or [] if isinstance(o, dict) and "md5" in o]
    with contextlib.suppress(OSError, dvc_adapter.yaml_corrupted_error()):
        text = Path(path).read_text()
        return all(h in text for h in hashes) and dvc_parse(text, path) == entry
    return False


def stage_status(before: dict | None, after: dict | None, runs_before: set[str], run_cache: str) -> str:
    """What a successful `dvc repro -s` did, from the stage's dvc.lock entry before and after it and the
    run-cache entries that existed before it:

    - unchanged: the dvc.lock entry is as it was (DVC found nothing to do);
    - ran: DVC ran the command; it then records the run in a new run-cache entry, or writes none when
      the stage cannot be cached (no deps, persist outs, run-cache off);
    - restored: the new dvc.lock entry was already in the run-cache: DVC restored the outputs from it.
      (A command rerun because the recorded outputs were gone from the cache reads as restored too.)
    """
    if after is None or after == before:
        return "unchanged" if after is not None else "ran"
    new = run_cache_entries(run_cache) - runs_before
    if any(_entry_is(p, after) for p in new):
        return "ran"
    return "restored" if any(_entry_is(p, after) for p in runs_before) else "ran"
