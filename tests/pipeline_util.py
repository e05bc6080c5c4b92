"""Helpers for tests that run the real DVC pipeline on tiny params in a temporary copy of the repo."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


# Verifiers must beat chance on their held-out set even in the smoke run: a few more steps and problems
# (held-out AUC 0.95-0.99 at 20 steps on the smoke DAG, family-23 EPYC; 40 gave the same).
TINY_VERIFIER = {"problems": 48, "samples": 4, "steps": 20, "batch_size": 16, "warmup": 1, "gold_frac": 0.3}


# The exact toy's step counts must stay multiples of log_every and cover table_steps.
TINY_EXACT = {"sft_steps": 30, "bt_pairs": 300, "grad_trials": 8, "steps": 10, "log_every": 5, "table_steps": [5, 10],
              "fixed_point_steps": 30, "frontier_betas": [3.0, 1.0, 0.3]}


def shrink(node, key=None):
    """A tiny version of params.yaml: a few training steps, a few problems per evaluation set."""
    # problems: all (two per cell cannot split a multiple of every set's cells; test_cli_stages measures a subset)
    tiny = {"steps": 3, "count": 2, "batch_size": 8, "warmup": 1, "passk_N": 4, "B": 4, "G": 4, "problems": None}
    if key == "exact" and isinstance(node, dict):
        return {**node, **TINY_EXACT}
    if key == "verifiers" and isinstance(node, dict):
        return {name: {k: TINY_VERIFIER.get(k, v) for k, v in entry.items()} for name, entry in node.items()}
    if isinstance(node, dict):
        return {k: (tiny[k] if k in tiny and isinstance(v, int) else shrink(v, k)) for k, v in node.items()}
    if isinstance(node, list):
        return [shrink(v) for v in node]
    return node


# A run family's seed: <family>_s<k> (also inside a stem such as rl_sft_s2 or passk_SFT_s2).
SEEDED = re.compile(r"[A-Za-z0-9_]*_s(\d+)")
KEEP_SEEDS = 1  # the smoke DAG keeps seed 0 of every family: every stage kind, within CI's time


def dropped(name, keep: int = KEEP_SEEDS) -> bool:
    """Whether `name` (a run, base, passk label, or a file stem such as outcomes_rl_sft_s2) is seed `keep`
    or later of its family."""
    m = SEEDED.fullmatch(name) if isinstance(name, str) else None
    return bool(m) and int(m.group(1)) >= keep


def _without_dropped(node, keep: int):
    """`node` without every list item, and every mapping entry (by key or by value), that names a dropped
    run: study arm lists, pairs maps (run -> base), passk models and arms."""
    if isinstance(node, dict):
        return {k: _without_dropped(v, keep) for k, v in node.items() if not (dropped(k, keep) or dropped(v, keep))}
    if isinstance(node, list):
        return [_without_dropped(v, keep) for v in node if not dropped(v, keep)]
    return node


def thin(params: dict, keep: int = KEEP_SEEDS) -> dict:
    """params.yaml with only seeds 0..keep-1 of every family <family>_s<k>: the runs of every group, the
    bases (cot_s2), the headline runs, the passk models and arms and every study's arms (so each arm keeps
    `keep` seeds and every pair still resolves). Names without a seed (cot, grpohi's base ...) stay."""
    out = _rebased(params, keep)
    for group in ("bases", "runs", "runs_noeval", "runs_orm", "runs_prm", "headline", "passk", "studies"):
        if group in out:
            out[group] = _without_dropped(out[group], keep)
    if isinstance(out.get("passk"), dict):  # an arm of only later seeds (run 2's second seeds) is gone, and its pairs
        arms = {label: keys for label, keys in out["passk"]["arms"].items() if keys}
        pairs = [pair for pair in out["passk"].get("pairs", []) if all(a in arms for a in pair)]
        out["passk"] = {**out["passk"], "arms": arms, "pairs": pairs}
    if "primaries" in out.get("studies", {}):  # run 2's rows need >= 2 bases x 2 seeds: the thin DAG judges none
        out["studies"] = {**out["studies"], "primaries": {"sequence": [], "rest": [], "rows": {}}}
    return _two_stability_variants(out)


def _kept_base(name: str, bases: dict, keep: int) -> str:
    """A dropped base's stand-in: its family's seedless base (cot_s6 -> cot), else the family's seed 0."""
    if not dropped(name, keep):
        return name
    prefix = "base_" if name.startswith("base_") else ""
    root = re.sub(r"_s\d+$", "", name.removeprefix(prefix))
    return prefix + (root if root in bases else f"{root}_s0")


def _rebased(params: dict, keep: int) -> dict:
    """Kept runs that start from a dropped base (run 2's hacking study starts from cot_s6), and a study's `base`
    naming one, start from the family's kept base instead: the smoke DAG keeps every stage kind, not every base."""
    bases = params.get("bases") or {}
    out = dict(params)
    for group in ("runs", "runs_noeval", "runs_orm", "runs_prm", "headline"):
        if isinstance(out.get(group), dict):
            out[group] = {name: {**job, "init": _kept_base(job["init"], bases, keep)}
                          if isinstance(job, dict) and "init" in job and not dropped(name, keep) else job
                          for name, job in out[group].items()}
    studies = out.get("studies") or {}
    out["studies"] = {k: ({**v, "base": _kept_base(v["base"], bases, keep)} if isinstance(v, dict)
                          and isinstance(v.get("base"), str) else v) for k, v in studies.items()}
    return out


def _strings(node) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_strings(v) for v in node.values()), set())
    if isinstance(node, list):
        return set().union(*(_strings(v) for v in node), set())
    return {node} if isinstance(node, str) else set()


def _two_stability_variants(params: dict) -> dict:
    """The ablations' stability map with its first two variants only (the reference and one compared with
    it), and without the runs only the others used: 8 fewer stages keep the smoke build within CI's time."""
    ablations = params.get("studies", {}).get("ablations", {})
    variants = (ablations.get("stability") or {}).get("variants")
    if not variants or len(variants) < 3:
        return params
    kept = dict(list(variants.items())[:2])
    before = _strings(params["studies"])
    out = {**params, "studies": {**params["studies"], "ablations": {
        **ablations, "stability": {**ablations["stability"], "variants": kept}}}}
    gone = before - _strings(out["studies"]) - _strings(out.get("headline")) - _strings(out.get("passk"))
    return {**out, "runs": {k: v for k, v in out["runs"].items() if k not in gone}}


def thin_dvc(dvc: dict, keep: int = KEEP_SEEDS) -> dict:
    """dvc.yaml without the file deps (and plot sources) that only a dropped run's stages make: the
    report stages that list each run's files (report_passk, report_headline_<task>)."""
    def keep_path(path) -> bool:
        return not (isinstance(path, str) and dropped(Path(path.split("${")[0] or "x").stem, keep))

    stages = {}
    for name, stage in dvc["stages"].items():
        body = stage.get("do", stage)
        if isinstance(body.get("deps"), list):
            body = {**body, "deps": [d for d in body["deps"] if keep_path(d)]}
        stages[name] = {**stage, "do": body} if "do" in stage else body
    plots = [{n: {**spec, "y": {f: c for f, c in spec["y"].items() if keep_path(f)}}
              if isinstance(spec.get("y"), dict) else spec for n, spec in plot.items()}
             for plot in dvc.get("plots", [])]
    return {**dvc, "stages": stages, **({"plots": plots} if "plots" in dvc else {})}


def thin_repo(repo: Path, keep: int = KEEP_SEEDS) -> None:
    """thin() params.yaml and thin_dvc() dvc.yaml of a copied repo (never ROOT's)."""
    assert repo.resolve() != ROOT
    set_params(repo, lambda p: p.update(thin(p, keep)))
    path = repo / "dvc.yaml"
    path.write_text(yaml.safe_dump(thin_dvc(yaml.safe_load(path.read_text()), keep), sort_keys=False))


# The smoke build takes 4-8 minutes on two busy cores; a command still running after this is stuck, and the test
# fails with what it printed and the processes left, rather than holding CI until its own limit.
RUN_TIMEOUT_S = 1800


def run(cmd: list[str], cwd: Path, check: bool = True, env: dict | None = None,
        timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCH_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stdout, stderr, ps = _stop(proc)
        raise AssertionError(f"{' '.join(cmd)} still ran after {timeout} s:\n{stdout[-3000:]}\n{stderr[-3000:]}\n"
                             f"processes when it was stopped:\n{ps}") from None
    except BaseException:  # Ctrl-C, or pytest-timeout's failure: the command does not outlive the test
        _stop(proc)
        raise
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stdout[-3000:]}\n{stderr[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def _stop(proc: subprocess.Popen) -> tuple[str, str, str]:
    """Interrupt a stuck command's process group (`reasonrl repro` then says which stages it stops), kill it after
    a minute; what it printed, with the processes still running then (which stage hung, and in what)."""
    ps = subprocess.run(["ps", "-eo", "pid,ppid,pgid,etime,stat,args"], capture_output=True, text=True).stdout
    ps = "\n".join(line[:200] for line in ps.splitlines() if "python" in line or "dvc" in line or "PID" in line)
    out = err = None
    for sig in (signal.SIGINT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            out, err = proc.communicate(timeout=60)
            break
        except subprocess.TimeoutExpired as exc:  # a process outside the group holds the pipes: what came so far
            out, err = (b.decode(errors="replace") if isinstance(b, bytes) else b for b in (exc.stdout, exc.stderr))
    return out or "", err or "", ps


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def copy_repo(dest: Path) -> Path:
    """Copy the project's tracked and untracked-but-not-ignored files into a fresh git repo at dest."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    for f in files:
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    shutil.copytree(ROOT / ".dvc", dest / ".dvc", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("cache", "tmp", "experiments"))
    run(["git", "init", "-q"], dest)
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A"], dest)
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "copy"], dest)
    return dest


def set_params(repo: Path, update) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    update(params)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def _listed(out: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", out)) | set(re.findall(r"Stage '([^']+)' is cached", out))


def stages_that_would_run(repo: Path) -> set[str]:
    """The stale stages `dvc repro --dry` lists: those whose own deps or params changed, not what they feed
    (a dry run does not change any output, so nothing downstream looks stale)."""
    return _listed(run(["dvc", "repro", "--dry"], repo).stdout)


def stale_after(repo: Path, update, against_dvc: bool = False) -> tuple[set[str], set[str]]:
    """After `update` changes params.yaml: (the stages whose own deps or params changed, by DVC's `Stage.changed`;
    those stages and everything downstream of them, from the plan `reasonrl repro` would run); nothing runs and
    params.yaml is restored. Both come from the planner's one in-process pass over DVC's stages (a pass costs
    about 10 s on the smoke DAG). The first set is what `dvc repro --dry` lists, the second what a rebuild reruns
    when each rerun stage changes its outputs, what `dvc repro --dry --force-downstream` lists: `against_dvc`
    checks both against the CLI."""
    from reasonrl.runner import plan

    passes = []

    def spy(*args):  # the planner's view of DVC's stages, kept
        passes.append(real(*args))
        return passes[-1]

    set_params(repo, update)
    real, plan._dvc_stages = plan._dvc_stages, spy
    try:
        closure = set(plan.stale_plan(str(repo), []).stages)
        (_, _, stages), = passes
        direct = {stage for stage, _, changed, _ in stages if changed}
        if against_dvc:
            assert direct == stages_that_would_run(repo)
            assert closure == _listed(run(["dvc", "repro", "--dry", "--force-downstream"], repo).stdout)
        return direct, closure
    finally:
        plan._dvc_stages = real
        run(["git", "checkout", "params.yaml"], repo)


def doc_example_task() -> tuple[str, str, dict]:
    """docs/extending.md's example task: (its name, its module's source, its params sections), as a new
    contributor copies them."""
    text = (ROOT / "docs/extending.md").read_text().split("## Add a task", 1)[1]
    source, = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    snippet, = re.findall(r"^ *```yaml\n(.*?)^ *```", text, re.S | re.M)
    name = re.search(r'^    name = "(\w+)"', source, re.M).group(1)
    return name, source, yaml.safe_load(textwrap.dedent(snippet))
