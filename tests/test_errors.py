"""Bad inputs fail before any work with one line on stderr (issue #12 items 3-5).

The table test feeds each bad input through the real stage command (or `reasonrl train`) in a small
project folder: tiny params, the data sets, a tiny base checkpoint. Each must exit non-zero, print
exactly one stderr line, `error: <key or path>: <what> (<fix>)`, and leave models/, reports/ and data/
as they were. `python tests/test_errors.py` prints the table of docs/errors.md from the same cases.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
import yaml

from reasonrl.checkpoint import load_checkpoint, save_checkpoint
from reasonrl.errors import CheckpointError, ConfigError, ReasonrlError, producing_stage, suggest
from reasonrl.model import ModelConfig, TinyReasoner

ROOT = Path(__file__).resolve().parents[1]

TINY_PHASE = {"steps": 2, "batch_size": 4, "lr": 1.0e-3, "warmup": 1, "min_lr_frac": 0.1, "weight_decay": 0.01,
              "grad_clip": 1.0, "n_range": [4, 8], "seed": 0}
TINY_MODEL = {"d_model": 32, "n_heads": 2, "n_layers": 1, "max_len": 96, "tied_head": True}
PARAMS = {
    "device": "cpu",
    "threads": 1,
    "data": {t: {role: {"ns": [n], "ks": [3], "count": 2, "seed": seed}
                 for role, n, seed in (("in", 8, 21), ("edge", 12, 21), ("far", 16, 21), ("think", 8, 31),
                                       ("val_in", 8, 41), ("val_edge", 12, 41), ("val_far", 16, 41))}
             for t in ("hop", "chain")},
    "bases": {"cot": {"task": "hop", "trace": 1.0, "model": TINY_MODEL, "train": TINY_PHASE},
              "chain": {"task": "chain", "trace": 1.0, "model": {**TINY_MODEL, "max_len": 128}, "train": TINY_PHASE}},
    "verifiers": {"orm": {"kind": "orm", "init": "cot", "model": None, "problems": 8, "samples": 2,
                          "temperature": 1.0, "gold_frac": 0.0, "holdout": 0.25, "n_range": [4, 6], "k_max": 3,
                          "steps": 2, "batch_size": 4, "lr": 1.0e-3, "warmup": 1, "min_lr_frac": 0.1,
                          "weight_decay": 0.01, "grad_clip": 1.0, "seed": 0}},
    "method": "grpo",
    "rl": {"init": "base_cot", "method": "grpo", "reward": "true", "steps": 2, "B": 2, "G": 2,
           "n_range": [4, 8], "k_max": 5, "eval": "none"},
    "runs": {"grpo_s0": {"task": "hop", "init": "base_cot", "method": "grpo", "seed": 0},
             "sft_s0": {"task": "hop", "init": "base_cot", "method": "sft", "seed": 0}},
    "runs_orm": {"hack_orm": {"task": "hop", "init": "base_cot", "reward": "orm"}},
    "headline": {"headline_s0": {"task": "hop", "init": "base_cot", "seed": 100}},
}

RL = ("rl.py", "runs", "grpo_s0")
BASE = ("base.py", "bases.cot", "base_cot")
TRAIN = ("-m", "reasonrl.runner.cli", "train", "--out", "runs/oneoff")


class Evil:
    """Pickles as a call of os.system: what a weights_only load must refuse."""

    def __reduce__(self):
        return (os.system, ("echo should-never-run",))


def _truncate(path: Path) -> None:
    """cut to its first half"""
    data = (path.parent / "base_cot.pt").read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _evil(path: Path) -> None:
    """a pickle that calls os.system"""
    torch.save({"format": "reasonrl-checkpoint-v1", "state_dict": {}, "x": Evil()}, path)


def _copy(path: Path) -> None:
    """a copy of models/base_cot.pt"""
    path.write_bytes((path.parent / "base_cot.pt").read_bytes())


def _dvc_9(path: Path) -> None:
    """the metadata of a dvc 9.9.9, first on the import path"""
    path.parent.mkdir(parents=True)
    path.write_text("Metadata-Version: 2.1\nName: dvc\nVersion: 9.9.9\n")


def _short_chain(path: Path) -> None:
    """a chain model of 64 positions"""
    model = TinyReasoner(ModelConfig(**{**TINY_MODEL, "max_len": 64}, task="chain"), torch.Generator().manual_seed(0))
    save_checkpoint(path, model, {"kind": "base"})


@dataclass
class Case:
    name: str  # what is wrong, for the table
    cmd: tuple[str, ...]  # stage script and arguments, or `-m reasonrl.runner.cli ...`
    expect: str  # regex the error line must match after `error: `
    set: dict = field(default_factory=dict)  # dotted params key -> value
    make: tuple = ()  # (file under the project, function writing it)
    drop: str = ""  # a file to delete before the command

    def shown(self) -> str:
        # one line however long: a line break would end the row of docs/errors.md's table
        flow = {"default_flow_style": True, "width": float("inf")}
        parts = [f"`{k}: {yaml.safe_dump(v, **flow).strip().removesuffix('...').strip()}`"
                 for k, v in self.set.items()]
        if self.make:
            parts.append(f"{self.make[0]} {self.make[1].__doc__}")
        if self.drop:
            parts.append(f"{self.drop} missing")
        cmd = (" ".join(["reasonrl", self.cmd[2], *self.cmd[5:]]) if self.cmd[0] == "-m"
               else f"python stages/{' '.join(self.cmd)}")
        return f"{', '.join(parts) or 'valid params'} — `{cmd}`"


CASES = [
    # unknown keys, one per section kind, each a near miss that gets a suggestion
    Case("unknown key: data", ("data.py", "hop"), r"^data\.hop\.in\.cuont: unknown key \(did you mean 'count'\?",
         {"data.hop.in.cuont": 3}),
    Case("unknown key: bases", BASE,
         r"^bases\.cot\.train\.stpes: unknown key \(did you mean 'steps'\?", {"bases.cot.train.stpes": 3}),
    Case("unknown key: model", BASE,
         r"^bases\.cot\.model\.n_layer: unknown key \(did you mean 'n_layers'\?",
         {"bases.cot.model.n_layer": 3}),
    Case("unknown key: verifiers", ("verifier.py", "orm"),
         r"^verifiers\.orm\.temprature: unknown key \(did you mean 'temperature'\?",
         {"verifiers.orm.temprature": 1.0}),
    Case("unknown key: rl", RL, r"^rl\.lrr: unknown key \(did you mean 'lr'\?", {"rl.lrr": 1.0e-4}),
    Case("unknown key: a run", RL, r"^runs\.grpo_s0\.bata: unknown key \(did you mean 'beta'\?",
         {"runs.grpo_s0.bata": 0.1}),
    # wrong types and bad values
    Case("wrong type", RL, r"^rl\.steps: expected an integer, got 'ten'", {"rl.steps": "ten"}),
    Case("wrong type in a base", BASE, r"^bases\.cot\.train\.lr: expected a number",
         {"bases.cot.train.lr": "fast"}),
    Case("G: 1 for GRPO", RL, r"^runs\.grpo_s0\.G: must be at least 2", {"runs.grpo_s0.G": 1}),
    Case("k_max >= n", RL, r"^runs\.grpo_s0\.k_max: must be in \[1, 7\]", {"runs.grpo_s0.k_max": 8}),
    Case("k >= n in a data set", ("data.py", "hop"), r"^data\.hop\.in\.ks: must be in \[1, 7\] for n=8, got 8",
         {"data.hop.in.ks": [3, 8]}),
    Case("n > 16", ("data.py", "hop"), r"^data\.hop\.edge\.ns: must be in \[2, 16\], got 17",
         {"data.hop.edge.ns": [17]}),
    Case("unknown role", ("data.py", "chain"), r"^data\.chain\.edg: unknown role \(did you mean 'edge'\?",
         {"data.chain.edg": {"ns": [9], "ks": [3], "count": 2, "seed": 1}}),
    Case("unknown task (data)", ("data.py", "hops"), r"^data\.hops: unknown task 'hops' \(did you mean 'hop'\?"),
    Case("unknown task (base)", BASE, r"^bases\.cot\.task: unknown task 'chains' \(did you mean 'chain'\?",
         {"bases.cot.task": "chains"}),
    Case("difficulty beyond a chain", ("data.py", "chain"), r"^data\.chain\.far\.ks: must be in \[1, 15\] for "
         r"n=16, got 16", {"data.chain.far.ks": [9, 16]}),
    Case("chain longer than max_len", ("base.py", "bases.chain", "base_chain"),
         r"^bases\.chain\.model\.max_len: 60 is shorter than the longest sequence this stage makes, 80 tokens "
         r"\(chain: n_range \[4, 8\]\)", {"bases.chain.model.max_len": 60}),
    Case("a continued base's task is not its init's", ("base.py", "bases.cont", "base_cont"),
         r"^bases\.cont\.task: 'chain', but models/base_cot\.pt learned 'hop' \(write task: hop\)",
         {"bases.cont": {"task": "chain", "init": "base_cot", "trace": 1.0, "train": TINY_PHASE}}),
    Case("a test set longer than the model", ("eval.py", "base_chain", "reports/eval"),
         r"^data\.chain\.in: its longest prompt \+ sampling budget is 69 tokens, more than the max_len 64 of "
         r"models/base_chain\.pt \(raise the base's model\.max_len", {"eval": {"passk_N": 2, "passk_ks": [1, 2]}},
         make=("models/base_chain.pt", _short_chain)),
    Case("a run's task is not its init's", RL, r"^runs\.grpo_s0\.task: 'chain', but models/base_cot\.pt is a 'hop' "
         r"model \(set task to hop, or start from a chain model\)", {"runs.grpo_s0.task": "chain"}),
    Case("n > 16 in an RL range", RL, r"^rl\.n_range: need 2 <= lo <= hi <= 16", {"rl.n_range": [4, 17]}),
    Case("unknown method (top level)", ("rl.py", "headline", "headline_s0"),
         r"^method: 'ppo' is not one of \['grpo', 'rft', 'sft'\]", {"method": "ppo"}),
    Case("unknown method in rl: that every run overrides", RL, r"^rl\.method: 'ppo' is not one of",
         {"rl.method": "ppo"}),
    Case("unknown method in a run", RL, r"^runs\.grpo_s0\.method: 'grpoo' is not one of .*did you mean 'grpo'",
         {"runs.grpo_s0.method": "grpoo"}),
    Case("verifier reward in the plain runs group", RL, r"^runs\.grpo_s0\.reward: 'orm' is not allowed in runs "
         r"\(move the run to runs_orm", {"runs.grpo_s0.reward": "orm"}),
    Case("negative steps", RL, r"^runs\.grpo_s0\.steps: must be at least 1, got -5", {"runs.grpo_s0.steps": -5}),
    Case("negative steps in a base", BASE, r"^bases\.cot\.train\.steps: must be at least 1",
         {"bases.cot.train.steps": -1}),
    Case("temperature 0", RL, r"^rl\.temperature: must be positive", {"rl.temperature": 0}),
    Case("temperature 0 for a verifier", ("verifier.py", "orm"), r"^verifiers\.orm\.temperature: must be positive",
         {"verifiers.orm.temperature": 0}),
    Case("B: 0", RL, r"^runs\.grpo_s0\.B: must be at least 1, got 0", {"runs.grpo_s0.B": 0}),
    Case("max_len too small", BASE, r"^bases\.cot\.model\.max_len: 20 is shorter than the "
         r"longest sequence this stage makes, 44 tokens .*\(set it to at least 44\)",
         {"bases.cot.model.max_len": 20}),
    Case("undefined run", ("rl.py", "runs", "nosuch"), r"^runs\.nosuch: no such run \(defined runs in runs: "
         r"grpo_s0, sft_s0\)"),
    Case("near-miss run name", ("rl.py", "runs", "grpo_s1"), r"^runs\.grpo_s1: no such run \(did you mean "
         r"'grpo_s0'\?"),
    Case("undefined run group", ("rl.py", "run", "grpo_s0"), r"^run: not a run group \(did you mean 'runs'\?"),
    Case("undefined base", ("base.py", "bases.cot_L3", "base_cot_L3"),
         r"^bases\.cot_L3: not defined in params\.yaml \(did you mean "
         r"'cot'\? defined: cot, chain\)"),
    Case("threads: 0", RL, r"^threads: must be an integer >= 1, got 0", {"threads": 0}),
    Case("numerics: avx3", RL, r"^numerics: must be one of avx2, compatible, native, got 'avx3'",
         {"numerics": "avx3"}),
    Case("train with numerics: fast", TRAIN, r"^numerics: must be one of avx2, compatible, native, got 'fast'",
         {"numerics": "fast"}),
    Case("missing checkpoint", RL, r"^models/base_gone\.pt: checkpoint not found \(run `dvc repro base@gone`, "
         r"or `dvc checkout models/base_gone\.pt`", {"runs.grpo_s0.init": "base_gone"}),
    Case("truncated checkpoint", RL, r"^models/base_cut\.pt: not a readable checkpoint: truncated or damaged"
         r".*\(run `dvc repro base@cut`", {"runs.grpo_s0.init": "base_cut"},
         make=("models/base_cut.pt", _truncate)),
    Case("pickle with a code reference", RL, r"^models/base_evil\.pt: not a readable checkpoint: it references "
         r"code, which weights_only loading refuses: .*(GLOBAL|global).*system",
         {"runs.grpo_s0.init": "base_evil"}, make=("models/base_evil.pt", _evil)),
    Case("missing data file", RL, r"^data/hop_think\.jsonl: data file not found \(run `dvc repro data@hop`",
         drop="data/hop_think.jsonl"),
    Case("stage called without its arguments", ("base.py", "bases.cot"),
         r"^stages/base\.py: expects <section> <stem>, got 1 argument\(s\) \(run it as dvc\.yaml does"),
    Case("train --set G=1", (*TRAIN, "--set", "G=1"), r"^--set G: must be at least 2 for group advantages"),
    Case("train --set nosuch=1", (*TRAIN, "--set", "nosuch=1"), r"^--set nosuch: unknown key"),
    Case("train --set with a near miss", (*TRAIN, "--set", "bta=0.1"), r"^--set bta: unknown key \(did you mean "
         r"'beta'\?"),
    Case("train --set of a top-level param", (*TRAIN, "--set", "threads=2"),
         r"^--set threads: a top-level param of params\.yaml, not a key of rl: \(set it in params\.yaml"),
    Case("train --set init as a base's name", (*TRAIN, "--set", "init=cot"),
         r"^--set init: no models/cot\.pt \(did you mean 'base_cot'\? init names a checkpoint by its file stem"),
    Case("train --set task the init was not trained on", (*TRAIN, "--set", "task=chain"),
         r"^--set task: 'chain', but models/base_cot\.pt is a 'hop' model \(set task to hop, or start from a chain"),
    Case("train with that task in rl", TRAIN, r"^rl\.task: 'chain', but models/base_cot\.pt is a 'hop' model",
         {"rl.task": "chain"}),
    Case("train with a base's name as rl.init", TRAIN, r"^rl\.init: no models/cot\.pt \(did you mean 'base_cot'\?",
         {"rl.init": "cot"}),
    Case("train --set init of a pipeline checkpoint not built here", (*TRAIN, "--set", "init=base_cot_s1"),
         r"^models/base_cot_s1\.pt: checkpoint not found \(run `dvc repro base@cot_s1`"),
    Case("train --set init near a verifier's name", (*TRAIN, "--set", "init=verfier_orm"),  # never a policy
         r"^models/verfier_orm\.pt: checkpoint not found", make=("models/verifier_orm.pt", _copy)),
    # `python -m` puts the working directory first on the import path, so the metadata found for dvc is this one
    Case("an untested DVC", ("-m", "reasonrl.runner.cli", "repro"), r"^dvc 9\.9\.9: `reasonrl repro` is tested "
         r"against dvc [\d.]+ only: .*or run plain `dvc repro`, which always works",
         make=("dvc-9.9.9.dist-info/METADATA", _dvc_9)),
]


def _set(params: dict, dotted: str, value) -> None:
    *path, last = dotted.split(".")
    node = params
    for part in path:
        node = node.setdefault(part, {})
    node[last] = value


def _snapshot(project: Path) -> dict:
    return {p.relative_to(project).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in ("models", "reports", "data") for p in sorted((project / d).rglob("*")) if p.is_file()}


def make_project(root: Path) -> Path:
    """A project folder as a user has it after `dvc pull`: params, data, a base checkpoint, a report."""
    from reasonrl.io import write_jsonl
    from reasonrl.pipeline import build_data_sets, data_config, data_path

    root.mkdir()
    (root / "params.yaml").write_text(yaml.safe_dump(PARAMS, sort_keys=False))
    for task in PARAMS["data"]:
        for role, problems in build_data_sets(task, data_config(PARAMS, task)).items():
            write_jsonl(root / data_path(task, role), [p.to_dict() for p in problems])
    save_checkpoint(root / "models" / "base_cot.pt",
                    TinyReasoner(ModelConfig(**TINY_MODEL), torch.Generator().manual_seed(0)), {"kind": "base"})
    (root / "reports" / "metrics").mkdir(parents=True)
    (root / "reports" / "metrics" / "base_cot.json").write_text("{}\n")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("errors") / "project")


def run_case(case: Case, project: Path, where: Path) -> tuple[subprocess.CompletedProcess, dict, dict]:
    shutil.copytree(project, where)
    params = copy.deepcopy(PARAMS)
    for key, value in case.set.items():
        _set(params, key, value)
    (where / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    if case.make:
        case.make[1](where / case.make[0])
    if case.drop:
        (where / case.drop).unlink()
    before = _snapshot(where)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REASONRL_DEBUG", None)
    cmd = case.cmd if case.cmd[0] == "-m" else (str(ROOT / "stages" / case.cmd[0]), *case.cmd[1:])
    proc = subprocess.run([sys.executable, *cmd], cwd=where, env=env, capture_output=True, text=True, timeout=300)
    return proc, before, _snapshot(where)


@pytest.mark.slow  # one Python process per case: about a minute on two cores
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_before_any_work(case, project, tmp_path):
    proc, before, after = run_case(case, project, tmp_path / "p")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    assert re.search(case.expect, lines[0].removeprefix("error: ")), lines[0]
    assert after == before  # nothing written, nothing removed
    assert not (tmp_path / "p" / "runs").exists()


def test_train_takes_a_job_key_that_rl_leaves_to_its_default(project, tmp_path):
    # `method` is also a top-level param (the headline's); an rl: without it still takes --set method
    params = copy.deepcopy(PARAMS)
    del params["rl"]["method"]
    shutil.copytree(project, tmp_path / "p")
    (tmp_path / "p" / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    proc = subprocess.run([sys.executable, *TRAIN, "--set", "method=rft", "--set", "steps=0"], cwd=tmp_path / "p",
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert proc.stderr.strip().splitlines()[-1].startswith("error: --set steps: must be at least 1"), proc.stderr


def test_an_unexpected_exception_keeps_its_traceback(project, tmp_path):
    """Bugs are not dressed as user errors: the hook lets anything but a ReasonrlError through."""
    script = tmp_path / "boom.py"
    script.write_text("from reasonrl.runtime import stage_setup\nstage_setup()\nraise ZeroDivisionError('boom')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script)], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "ZeroDivisionError: boom" in proc.stderr
    # and REASONRL_DEBUG=1 shows a user error's traceback too
    script.write_text("from reasonrl.runtime import stage_setup\nfrom reasonrl.errors import ConfigError\n"
                      "stage_setup()\nraise ConfigError('rl.lr', 'bad', 'fix it')\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=project, env={**env, "REASONRL_DEBUG": "1"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "rl.lr: bad (fix it)" in proc.stderr


# ----------------------------------------------------------------------------- in-process, fast

def test_error_text_is_where_what_fix_on_one_line():
    e = ConfigError("rl.lr", "must be\npositive", "try 1e-4")
    assert str(e) == "rl.lr: must be positive (try 1e-4)"
    assert str(ConfigError("rl.lr: legacy message")) == "rl.lr: legacy message"
    assert str(e.within("runs.x")) == "runs.x.rl.lr: must be positive (try 1e-4)"
    assert e.within("rl") is e
    assert isinstance(e, ValueError) and isinstance(e, ReasonrlError)


def test_nearest_key_is_suggested_only_when_near():
    assert suggest("stpes", ["steps", "seed", "lr"]) == "steps"
    assert suggest("xyzzy", ["steps", "seed", "lr"]) is None


def test_producing_stage_reads_dvc_lock_then_guesses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert producing_stage("models/base_cot.pt") == "base@cot"  # no dvc.lock: from the name
    assert producing_stage("models/verifier_orm.pt") == "verifier@orm"
    assert producing_stage("data/hop_val_in.jsonl") == "data@hop"
    assert producing_stage("reports/x.json") is None
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {
        "rl_orm@hack_orm": {"cmd": "x", "outs": [{"path": "models/rl_hack_orm.pt", "md5": "0"}]},
        "sets": {"cmd": "y", "outs": [{"path": "data/hop_in.jsonl", "md5": "1"}]}}}))
    assert producing_stage("models/rl_hack_orm.pt") == "rl_orm@hack_orm"
    assert producing_stage("data/hop_in.jsonl") == "sets"


def test_producing_stage_parses_only_a_lock_that_names_the_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dvc.lock").write_text("stages: {base@cot: {outs: [{path: models/base_cot.pt}]}}\n")
    parsed = []
    real = yaml.load
    monkeypatch.setattr(yaml, "load", lambda *a, **k: parsed.append(1) or real(*a, **k))
    assert producing_stage("models/verifier_orm.pt") == "verifier@orm" and parsed == []  # not in it: no parse
    assert producing_stage("models/base_cot.pt") == "base@cot" and parsed == [1]
    (tmp_path / "dvc.lock").write_text("stages: {models/base_cot.pt: [\n")  # torn: the guess, not a traceback
    assert producing_stage("models/base_cot.pt") == "base@cot"


def test_refused_pickle_names_the_global_not_the_migration_note(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # away from the project's dvc.lock: the message's fix would parse it (seconds)
    _evil(tmp_path / "evil.pt")
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "evil.pt")
    msg = str(e.value)
    assert "system" in msg and "weights_only" in msg and "PyTorch 2.6" not in msg and "\n" not in msg


if __name__ == "__main__":  # the table of docs/errors.md
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = make_project(Path(tmp) / "project")
        print("| input | message (stderr, exit status 2) |\n|---|---|")
        for i, case in enumerate(CASES):
            proc, _, _ = run_case(case, base, Path(tmp) / f"c{i}")
            line = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"(exit {proc.returncode})"
            code = f"`` {line} ``" if "`" in line else f"`{line}`"  # a message may quote a command
            cells = (f"{case.name}: {case.shown()}", code)
            print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")  # a pipe in a cell would split it
