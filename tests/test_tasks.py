"""The Task conformance suite: every task present (reasonrl/tasks/<name>.py) keeps the promises the library
relies on, through the paths the pipeline itself takes: the data stage's sets (pipeline.data_config), an RL
run's spec (Job.spec), the verifiers' labels (verifiers.step_targets). A new task passes these before
anything else uses it (docs/extending.md); nothing here names a task's own failure types or spec values."""

from __future__ import annotations

import inspect
import json
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from reasonrl.config import ConfigError
from reasonrl.io import write_jsonl
from reasonrl.pipeline import ROLES, build_data_sets, data_config, read_problems
from reasonrl.rl.job import Job
from reasonrl.tasks import ALPHABET, ANSWER_MARK, END, STOI, decode, encode, get_task, names, trace_of, vocab_size
from reasonrl.verifiers import step_targets


def problems(task, seed: int = 0, count: int = 200) -> list:
    rng = random.Random(seed)
    return [task.sample(rng, task.example_spec) for _ in range(count)]


@pytest.fixture(params=names())
def task(request):
    return get_task(request.param)


def test_the_alphabet_only_grows_at_its_end():
    # every checkpoint's token ids are positions in it: a reordering or an insertion changes old models' meaning
    assert ALPHABET.startswith("abcdefghijklmnop0123456789>,?=|$+-*qrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert len(set(ALPHABET)) == len(ALPHABET) and STOI["a"] == 1 and STOI["*"] == 35


def test_prompts_and_targets_round_trip_through_the_alphabet(task):
    assert set(task.chars) >= {ANSWER_MARK, END} and set(task.chars) <= set(ALPHABET)
    for p in problems(task):
        for text in (p.prompt, p.target("cot"), p.target("direct")):
            assert set(text) <= set(task.chars)  # the model's vocabulary is its task's alone
            assert decode(encode(text)) == text and 0 < max(encode(text)) < vocab_size(task)  # 0 pads


def test_gold_targets_are_correct_well_formed_and_in_the_response_format(task):
    for p in problems(task):
        cot, direct = p.target("cot"), p.target("direct")
        assert cot == p.trace + ANSWER_MARK + p.answer + END and direct == ANSWER_MARK + p.answer + END
        assert p.answer and ANSWER_MARK not in p.answer + p.trace and END not in p.answer + p.trace
        assert p.is_correct(cot) and p.is_correct(direct)
        assert p.classify(cot) == p.classify(direct) == "correct" == task.failure_types[0]
        assert task.parse_answer(cot) == p.answer and trace_of(cot) == p.trace
        assert task.thinks(cot) == bool(p.trace) and not task.thinks(direct)
        assert not task.thinks(p.trace) and not task.thinks(p.trace + END)  # no mark: no answer after a trace
        assert task.well_formed(cot) == bool(p.trace) and not task.well_formed(direct)
        assert task.thinks_well(cot) == bool(p.trace) and not task.thinks_well(direct)  # the think rates' count
        assert not task.thinks_well(cot + END) and task.thinks(cot + END) == bool(p.trace)  # any trace: thinks only
        assert not task.well_formed(cot + END) and not task.well_formed(p.trace)
        assert len(cot) <= p.budget  # the sampler leaves room for the gold response


def test_gold_steps_are_right_and_a_changed_step_is_wrong_from_there(task):
    rng = random.Random(1)
    for p in problems(task, count=100):
        assert p.step_labels(p.trace) == [True] * len(p.trace)
        if not p.trace:
            continue
        i = rng.randrange(len(p.trace))  # a gold trace is determined by the prompt: any other character is wrong
        bad = p.trace[:i] + rng.choice([c for c in task.chars if c not in (p.trace[i], ANSWER_MARK, END)])
        labels = p.step_labels(bad)
        assert len(labels) == len(bad) and all(labels[:i]) and not labels[i], (p.trace, bad, labels)


def test_every_outcome_type_has_a_probe_that_classify_agrees_with(task):
    rng = random.Random(1)
    for p in problems(task, count=100):
        probes = task.probes(p, rng)
        assert list(probes) == list(task.failure_types)  # one hand-built response per outcome type
        for kind, response in probes.items():
            assert p.classify(response) == kind, (kind, response)
            assert p.is_correct(response) == (kind == "correct")
            assert len(p.step_labels(trace_of(response))) == len(trace_of(response))


def test_the_verifiers_judge_the_whole_answer(task):
    """The ORM's label sits on the answer's last character (answers may be longer than one); the PRM's on
    every trace character, then there."""
    rng = random.Random(4)
    for p in problems(task, count=50):
        cot = p.target("cot")
        (last,), (label,) = step_targets("orm", p, cot)
        assert cot[last] == p.answer[-1] and cot[last + 1] == END and last == len(p.trace) + len(p.answer)
        assert label == 1.0
        offsets, labels = step_targets("prm_full", p, cot)
        assert offsets == [*range(len(p.trace)), last] and labels == [1.0] * len(offsets)
        for kind, response in task.probes(p, rng).items():
            assert step_targets("orm", p, response)[1] == [float(kind == "correct")]


def test_the_data_stage_builds_every_role_from_the_cells_params_name(task, tmp_path):
    """data.<task>: ns and ks as params.yaml writes them, through pipeline.data_config and build_data_sets."""
    d = task.difficulty
    n, k = task.example_cell["n"], task.example_cell[d]
    section = {role: {"ns": [n], "ks": [k], "count": 4, "seed": i} for i, role in enumerate(ROLES)}
    sets = build_data_sets(task.name, data_config({"data": {task.name: section}}, task.name))
    assert set(sets) == set(ROLES)
    for role, drawn in sets.items():
        assert len({p.key for p in drawn}) == 4 and {p.difficulty for p in drawn} == {k}, role
        write_jsonl(tmp_path / f"{role}.jsonl", [p.to_dict() for p in drawn])
        assert read_problems(tmp_path / f"{role}.jsonl") == drawn  # the data file names its task
    for key, bad in (("ks", {"ks": [10 ** 6]}), ("ns", {"ns": [10 ** 6]})):
        broken = {**section, "far": {**section["far"], **bad}}
        with pytest.raises(ConfigError, match=rf"^data\.{task.name}\.far\.{key}: "):
            data_config({"data": {task.name: broken}}, task.name)


def test_difficulty_is_respected(task):
    spec, cell = task.example_spec, task.example_cell
    task.check_spec(spec)
    task.check_spec(cell)
    drawn = problems(task)
    assert all(p.budget <= task.max_budget(spec) for p in drawn)
    assert max(p.budget for p in drawn) == task.max_budget(spec)  # 200 draws reach the hardest problem
    assert all(len(p.prompt) + len(p.target("cot")) <= task.longest(spec, "cot") for p in drawn)
    assert all(len(p.prompt) + len(p.target("direct")) <= task.longest(spec, "direct") for p in drawn)
    assert len({p.difficulty for p in drawn}) > 1
    cells = task.eval_set(cell, 20, seed=3)
    assert len({p.key for p in cells}) == 20
    assert all(p.difficulty == cell[task.difficulty] for p in cells)
    excluded = task.eval_set(cell, 20, seed=3, exclude=frozenset(p.key for p in cells))  # the same draws, skipped
    assert len(excluded) == 20 and not {p.key for p in excluded} & {p.key for p in cells}


def test_an_rl_run_draws_from_its_job_spec(task):
    """Job.spec, built from the run's n_range / k_min / k_max, is the task's example_narrow spec: its
    difficulties only, within the budget and length the RL loop sizes its buffers by."""
    d = task.difficulty
    spec = task.example_narrow
    task.check_spec(spec)
    job = Job(task=task.name, n_range=spec["n_range"], k_min=spec[f"{d}_min"], k_max=spec[f"{d}_max"])
    assert job.spec == spec
    rng = random.Random(2)
    drawn = [task.sample(rng, job.spec) for _ in range(300)]
    assert {p.difficulty for p in drawn} == set(range(spec[f"{d}_min"], spec[f"{d}_max"] + 1))
    assert all(p.budget <= task.max_budget(job.spec) for p in drawn)
    assert all(len(p.prompt) + p.budget <= task.longest(job.spec, "sampled") for p in drawn)
    with pytest.raises(ConfigError, match=f"^{d}_min: "):
        task.check_spec({**spec, f"{d}_min": spec[f"{d}_max"] + 1})
    with pytest.raises(ConfigError, match=f"^{d}_max: "):
        task.check_spec({**spec, f"{d}_max": 10 ** 6})
    # a minimum of 1 is the full range: the same draws as a spec without it
    wide = {key: v for key, v in spec.items() if key != f"{d}_min"}
    assert [task.sample(random.Random(3), wide) for _ in range(5)] == \
        [task.sample(random.Random(3), {**wide, f"{d}_min": 1}) for _ in range(5)]


def test_the_same_rng_gives_the_same_problems_and_files_round_trip(task):
    assert problems(task, seed=5) == problems(task, seed=5)
    assert problems(task, seed=5) != problems(task, seed=6)
    assert task.eval_set(task.example_cell, 10, seed=7) == task.eval_set(task.example_cell, 10, seed=7)
    for p in problems(task, count=50):
        q = task.from_dict(p.to_dict())
        assert q == p and q.key == p.key and q.task is task and p.to_dict()["task"] == task.name


def test_the_random_guess_baseline_is_a_probability_rising_with_k(task):
    for p in problems(task, count=20):
        values = [p.random_guess(k) for k in (0, 1, 4, 32)]
        assert values[0] == 0.0 and all(0 < v <= 1 for v in values[1:]) and values == sorted(values)


def test_an_unknown_task_is_one_error_naming_the_key():
    assert {"hop", "chain"} <= set(names()) and "base" not in names()
    with pytest.raises(ConfigError, match=r"^bases\.cot\.task: unknown task 'hopp' \(did you mean 'hop'\? "
                                          r"registered tasks: .*\bhop\b"):
        get_task("hopp", "bases.cot.task")


@pytest.mark.slow
def test_the_example_task_of_docs_extending_passes_this_suite_as_written(tmp_path):
    """A new contributor copies the doc's module and params: the suite is green on it, and its params load."""
    from pipeline_util import ROOT, doc_example_task

    name, source, sections = doc_example_task()
    for part in ("reasonrl", "tests"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)  # the test markers
    (tmp_path / f"reasonrl/tasks/{name}.py").write_text(source)
    check = ("from reasonrl.pipeline import data_config, section; from reasonrl.pretrain import BaseConfig; "
             f"import json, sys; p = json.loads(sys.argv[1]); data_config(p, {name!r}); "
             "[section(p, f'bases.{b}', BaseConfig) for b in p['bases']]")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TORCH_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", check, json.dumps(sections)], cwd=tmp_path, env=env, check=True)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
                          "tests/test_tasks.py", "-k", f"[{name}]"], cwd=tmp_path, env=env, capture_output=True,
                         text=True)
    passed = re.search(r"\b(\d+) passed", out.stdout)
    assert out.returncode == 0 and passed, out.stdout[-3000:]
    every = [f for n, f in globals().items() if n.startswith("test_") and "task" in inspect.signature(f).parameters]
    assert int(passed.group(1)) == len(every) >= 10, out.stdout[-500:]  # every test that takes a task ran on it
