"""benchmarks/dag_bound.py: the model-FLOP counts the DAG's compute bound is summed from, on hand-built
inputs, and the closed form against the products a real forward records."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import dag_bound as D  # noqa: E402


def test_closed_form_by_hand():
    m = D.Model(d=2, layers=1, vocab=3)
    assert m.per_token == 24 * 4 + 2 * 2 * 3 == 108 and m.attn == 4
    assert m.seq(2) == 2 * 108 + 4 * 2 * 3 == 240
    assert m.seq(1) == 108 + 4 * 1 * 2 == 116
    assert m.group(1, 1, 3) == 116 + 3 * (240 - 116) == 488  # the prompt once, three responses after it


@pytest.mark.parametrize("task", ["hop", "chain"])
def test_closed_form_is_what_a_forward_records(task):
    from reasonrl.tasks import get_task, vocab_size

    shape = {"d_model": 32, "n_heads": 2, "n_layers": 2, "max_len": 64, "task": task}
    closed, recorded = D.check_against_recorded(D.Model(32, 2, vocab_size(get_task(task))), shape, length=20)
    assert closed == recorded


def test_an_rl_run_counts_rollouts_updates_reference_reward_and_evaluations(tmp_path, monkeypatch):
    m = D.Model(d=2, layers=1, vocab=3)
    monkeypatch.setattr(D, "drawn", lambda task, spec, trace=1.0, n=2000: (1.0, 1.0))
    monkeypatch.setattr(D, "KL_GROUPS", 1)
    history = tmp_path / "run.csv"
    # step 2 drew twice the samples (dynamic sampling)
    history.write_text("step,rollout/length,rollout/count\n1,1,6\n2,1,12\n")
    job = {"task": "hop", "B": 2, "G": 3, "steps": 2, "beta": 0.0, "reward": "orm", "num_iterations": 1,
           "eval": "val_edge", "eval_every": 1}
    evals = {"val_edge": [(1, 1)]}
    batch = 2 * 488  # B groups of m.group(1, 1, 3)
    per_step = 3 * batch + batch / 2  # update (x3), the KL record's forward on 1 of 2 groups
    orm = (6 + 12) * 240  # the ORM on every drawn sample
    expected = (6 / 3 + 12 / 3) * 488 + 2 * per_step + orm + 3 * 240  # rollouts, steps, evaluations at 0, 1, 2
    assert D.rl_flops({"hop": m}, job, history, evals) == expected == 14800
    # with a KL term every row needs the reference; two updates per batch double the update
    assert D.rl_flops({"hop": m}, {**job, "beta": 0.1}, history, evals) == expected + 2 * batch / 2
    assert D.rl_flops({"hop": m}, {**job, "num_iterations": 2}, history, evals) == expected + 2 * 3 * batch
    # evaluations every 2 steps of a run that stopped after 3 (its rollout budget): at 0, 2 and after 3
    history.write_text("step,rollout/length,rollout/count\n1,1,6\n2,1,6\n3,1,6\n")
    three = D.rl_flops({"hop": m}, {**job, "steps": 10, "eval_every": 2, "reward": "true"}, history, evals)
    assert three == 3 * (batch + 3 * batch + batch / 2) + 3 * 240
    # a run not yet trained: steps of the gold length and B x G samples
    no_run = D.rl_flops({"hop": m}, {**job, "eval": "none", "reward": "true"}, tmp_path / "none.csv", evals)
    assert no_run == 2 * (batch + 3 * batch + batch / 2)


def test_a_passk_stage_counts_its_own_sets_and_the_problems_it_measures(monkeypatch):
    m = D.Model(d=2, layers=1, vocab=3)
    seen = []

    def fake(task, role, m=None):
        seen.append((task, role, m))
        return [(1, 1)] * (m or 1000)

    monkeypatch.setattr(D, "problems", fake)
    cfg = {"sets": ["edge", "far", "in"], "eval": {"passk_N": 3, "problems": 248}}
    # three sets of 248 problems, each the prompt once and three samples after it (m.group(1, 1, 3) = 488)
    assert D.passk_flops({"hop": m}, {"task": "hop"}, cfg) == 3 * 248 * 488
    assert seen == [("hop", r, 248) for r in ("edge", "far", "in")]
    # a second draw measures edge alone; with no subset, every problem
    assert D.passk_flops({"hop": m}, {"task": "hop", "sets": ["edge"]}, cfg) == 248 * 488
    assert D.passk_flops({"hop": m}, {"task": "hop"}, {**cfg, "eval": {"passk_N": 3}}) == 3 * 1000 * 488
    assert D.passk_flops({"hop": m}, {"task": "hop", "sets": []}, cfg) == 3 * 248 * 488  # []: every set


def test_the_problems_of_a_passk_stage_are_the_subset_it_measures(monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # data/*.jsonl, as the script reads them
    whole, part = D.problems("hop", "in"), D.problems("hop", "in", 248)
    # hop `in` holds 8 (n, k) cells of 125 problems: 31 of each, the first in file order
    assert len(whole) == 1000 and len(part) == 248 and set(part) <= set(whole)


def test_timeline_reads_ran_stages_and_sums_each_parts_wall_clock(tmp_path):
    one, two = tmp_path / "1.log", tmp_path / "2.log"
    one.write_text("[23:59:00] machine  x\n[23:59:00] start    a@1  on w\n"
                   "[00:01:00] finished a@1  in 120.0s (ran)  [1/2, about 1 min left]\n")
    two.write_text("[10:00:00] start    b\n[10:00:30] finished b  in 3.5s (restored)\n"
                   "[10:00:30] start    c\n[10:02:00] finished c  in 90.0s (ran)  [2/2, about 0 s left]\n")
    assert D.timeline([str(one), str(two)]) == ([("a@1", 120.0), ("c", 90.0)], 120.0 + 120.0)


def test_timeline_sums_the_segments_of_a_resumed_log_and_ends_one_at_its_stopped_line(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("# confirmatory run\n[13:43:53] machine  x\n[13:43:56] start    a  on w\n"
                   "[13:44:13] finished a  in 16.7s (ran)  [1/3]\n[13:45:59] start    b  on w\n"
                   "# stopped 2026-12-05T13:52:00Z (paused, then ended)\n# resumed 2026-12-05T14:42:37Z\n"
                   "[14:42:59] machine  x\n[14:43:01] start    b  on w\n[14:53:59] finished b  in 658.4s (ran)  [2/3]\n"
                   "[23:59:00] start    c  on w\n[00:01:00] finished c  in 120.0s (ran)  [3/3]\n")
    # 13:43:53 -> 13:52:00 (the stop), then 14:42:59 -> 00:01:00 next day; the 50 minutes between do not count
    assert D.timeline([str(log)]) == ([("a", 16.7), ("b", 658.4), ("c", 120.0)], 487.0 + 33481.0)


def test_timeline_takes_a_stop_noted_early_as_the_last_line_and_never_adds_a_day_for_it(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("[10:00:00] machine  x\n[10:00:00] start    a  on w\n[10:05:00] start    b  on w\n"
                   "# stopped 2026-12-05T10:04:59Z\n"  # read off a clock by hand, a second before the last line
                   "[23:40:00] machine  x\n[23:40:00] start    b  on w\n[23:42:00] finished b  in 120.0s (ran)\n"
                   "# stopped 2026-12-06T00:10:00Z\n")  # past midnight, 28 minutes after the last line
    assert D.timeline([str(log)]) == ([("b", 120.0)], 300.0 + 30 * 60)
