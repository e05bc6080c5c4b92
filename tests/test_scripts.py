"""The helper scripts' pure parts, on hand-built inputs."""

import hashlib
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bands  # noqa: E402
import eta_replay  # noqa: E402
import power  # noqa: E402
import pytest  # noqa: E402
import reference_md5s as R  # noqa: E402
import relock  # noqa: E402
import verified_check  # noqa: E402

from reasonrl import stats  # noqa: E402
from reasonrl.io import write_json  # noqa: E402
from reasonrl.studies import index  # noqa: E402


def test_reference_md5s_read_from_a_lock():
    lock = """schema: '2.0'
stages:
  base@cot:
    cmd: python stages/base.py bases.cot base_cot
    outs:
    - path: models/base_cot.pt
      hash: md5
      md5: 5756b7fbc03a7b57012d141a2cb1d7be
      size: 1
    - path: reports/timing/base_cot.json
      md5: 00000000000000000000000000000000
  exact:
    outs:
    - path: reports/exact/results.json
      md5: ae0f15a465214ecbaa42e59e11df6f92
"""
    assert R.recorded(lock) == {"models/base_cot.pt": "5756b7fbc03a7b57012d141a2cb1d7be",
                                "reports/exact/results.json": "ae0f15a465214ecbaa42e59e11df6f92"}
    assert R.recorded("") == {}


def test_relock_deps_takes_the_code_stamps_and_drops_what_moved_into_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports/code").mkdir(parents=True)
    (tmp_path / "reports/code/base_hop.txt").write_text("stamp\n")
    old = [{"path": "data/hop_in.jsonl", "md5": "d"}, {"path": "models/base_cot.pt", "md5": "m"},
           {"path": "reasonrl/io.py", "md5": "old"}]
    new = relock.relocked("mixed@x", ["reports/code/base_hop.txt", "models/base_cot.pt"], old)
    assert [d["path"] for d in new] == ["models/base_cot.pt", "reports/code/base_hop.txt"]
    assert new[0] is old[1] and new[1]["md5"] == hashlib.md5(b"stamp\n").hexdigest()
    with pytest.raises(SystemExit, match="mixed@x: models/new.pt not in dvc.lock"):
        relock.relocked("mixed@x", ["models/new.pt"], old)


def test_prune_drops_removed_stages_and_names_only_the_outputs_no_kept_stage_records():
    stages = {
        "data": {"outs": [{"path": "data/n16.jsonl"}, {"path": "reports/timing/data.json"}]},
        "data@hop": {"outs": [{"path": "data/hop_edge.jsonl"}, {"path": "reports/timing/data_hop.json"}]},
        "passk@GRPO_s0": {"outs": [{"path": "reports/passk/curve_GRPO_s0.csv"}, {"path": "data/hop_edge.jsonl"}]},
        "report_passk": {"deps": [{"path": "reports/passk/data"}], "outs": [{"path": "reports/passk/table.md"}]},
    }
    kept, orphans = relock.pruned(stages, {"data@hop", "report_passk"})
    assert list(kept) == ["data@hop", "report_passk"]
    assert kept["report_passk"] is stages["report_passk"]
    assert orphans == ["data/n16.jsonl", "reports/passk/curve_GRPO_s0.csv", "reports/timing/data.json"]
    assert relock.pruned(stages, set(stages)) == (stages, [])


def test_prune_dry_writes_nothing_and_prune_drops(tmp_path, monkeypatch, capsys):
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=tmp_path, check=True, env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    (tmp_path / "dvc.yaml").write_text("stages:\n  a:\n    cmd: echo a > a.txt\n    outs: [a.txt]\n")
    lock = ("schema: '2.0'\nstages:\n  a:\n    cmd: echo a > a.txt\n    outs:\n    - path: a.txt\n"
            "      hash: md5\n      md5: 60b725f10c9c85c70d97880dfe8191b3\n      size: 2\n"
            "  gone:\n    cmd: echo b > b.txt\n    outs:\n    - path: b.txt\n"
            "      hash: md5\n      md5: 3b5d5c3712955042212316173ccf37be\n      size: 2\n")
    (tmp_path / "dvc.lock").write_text(lock)
    monkeypatch.chdir(tmp_path)
    assert relock.prune(dry=True) == 0
    out, err = capsys.readouterr()
    assert out == "b.txt\n" and "1 stages would be dropped" in err and "gone" in err
    assert (tmp_path / "dvc.lock").read_text() == lock
    assert relock.prune() == 0
    out, err = capsys.readouterr()
    assert out == "b.txt\n" and "1 stages dropped" in err
    assert "gone" not in (tmp_path / "dvc.lock").read_text() and "  a:" in (tmp_path / "dvc.lock").read_text()


def test_eta_replay_lays_the_logs_end_to_end_and_scores_the_time_left(tmp_path):
    one = tmp_path / "part1.log"
    one.write_text("""[23:59:50] machine  x
[23:59:50] start    rl@a_s0  on w1
[23:59:55] start    rl@a_s1  on w2
[00:09:50] finished rl@a_s0  in 600.0s (ran)  [1/3, about 1 min left]
[00:10:00] interrupted: stopping the running stages
[00:10:00] stopped  rl@a_s1
""")
    two = tmp_path / "part2.log"
    two.write_text("""[08:00:00] start    rl@a_s1  on w1
[08:20:00] finished rl@a_s1  in 1200.0s (ran)  [1/2, about 1 min left]
[08:20:00] start    report  on w1
[08:20:10] finished report  in 10.0s (unchanged)  [2/2, about 0 s left]
""")
    parts = eta_replay.parts_of([str(one), str(two)])
    # the versions compared are loaded from their source text; the one checked out here, as the script does
    progress = eta_replay.module("progress_now", (Path(__file__).resolve().parents[1] / "reasonrl/runner/progress.py")
                                 .read_text())
    # past midnight in part 1; part 2 starts 1 s after part 1's last start or finish (600 s in: the stopped
    # stage's time dropped), and that stage counts only where it finished
    assert parts == [[(0.0, "start", "rl@a_s0", None, None), (600.0, "finished", "rl@a_s0", 600.0, "ran")],
                     [(601.0, "start", "rl@a_s1", None, None), (1801.0, "finished", "rl@a_s1", 1200.0, "ran"),
                      (1801.0, "start", "report", None, None), (1811.0, "finished", "report", 10.0, "unchanged")]]
    # resumed at part 2: rl@a_s1 takes its arm's 600 s (+ 5 for DVC), report the median of all (600 + 5),
    # on two workers; at rl@a_s1's finish 10 s are left and the time left says (605 * 1) / 2: not scored
    said, left, errors = eta_replay.replay(progress, parts, 2)
    assert (said, left, errors) == ((605.0 + 605.0) / 2, 1210.0, [])
    assert eta_replay.expected(progress, {"rl@a_s0": 600.0, "rl@b_s0": 30.0}, ["rl@a_s1", "rl@c_s0"]) == {
        "rl@a_s1": 605.0, "rl@c_s0": 320.0}  # its arm; a new arm: the kind's median (600 + 30) / 2, + 5 for DVC
    said, left, errors = eta_replay.replay(progress, parts, 1)  # a fresh build: 60 + 5 s each, 3 stages
    assert said == 3 * 65.0 / 2 and left == 1811.0
    # at rl@a_s0's finish (600 s in, 1211 left): rl@a_s0 took 600 against 65, so its arm's other seed says
    # 65 * 600 / 65 = 600, report (its own arm and kind, no evidence) 65: (600 + 65) / 2
    assert errors == [abs((600.0 + 65.0) / 2 - 1211.0) / 1211.0]


def test_power_rows_count_each_distinct_comparison_once_and_skip_the_untestable(tmp_path):
    def ans(effect, run_sd, a=0.5):
        se_run = run_sd / 5 ** 0.5
        return {"a": a, "b": a + effect, "effect": effect, "ci_lo": 0, "ci_hi": 0, "se": se_run, "df": 4, "p": 0.1,
                "mde": 0.1, "seeds": 5, "problems": 100, "constant": None, "se_run": se_run, "run_sd": run_sd}

    for name, a in {"shared": ans(0.2, 0.1), "top": ans(0.0, 0.1, a=1.0)}.items():
        write_json(tmp_path / "passk" / "answers" / f"{name}.json", a)
    claims = {"up": index.Claim("P", "c", "passk", "shared", 1), "down": index.Claim("P", "c", "passk", "shared", -1),
              "top": index.Claim("P", "c", "passk", "top", 1), "gone": index.Claim("P", "c", "passk", "gone", 1),
              "lost": index.Claim("P", "c", "passk", "lost", 1)}
    write_json(tmp_path / "passk" / "manifest.json", {"not_computed": {"lost": "no problem left unsolved"}})
    table, m = power.rows(index.Config(claims=claims), tmp_path, 0.8, 400)
    assert m == 1 and [r["claim"] for r in table] == ["up", "down", "top", "gone", "lost"]
    assert table[2]["not testable"].startswith("at the ceiling")
    assert table[3]["not testable"].endswith("was not computed (no such arms in this run)")
    assert table[4]["not testable"].endswith("was not computed (no problem left unsolved)")  # the study's reason
    # m = 1: alpha 0.05; run sd 0.1, no problem term: the first n whose power for 0.1 beyond 0.01 reaches 0.8
    n = table[0]["seeds for power_for"]
    assert table[1]["seeds for power_for"] == n
    assert stats.power(0.1 / n ** 0.5, n - 1, 0.1, 0.01) >= 0.8 > stats.power(0.1 / (n - 1) ** 0.5, n - 2, 0.1, 0.01)


def test_power_registered_rows_project_each_primary_to_its_registered_seeds(tmp_path):
    ans = {"a": 0.5, "b": 0.8, "effect": 0.3, "ci_lo": 0, "ci_hi": 0, "se": 0.05, "df": 4, "p": 0.1, "mde": 0.1,
           "seeds": 5, "problems": 100, "constant": None, "se_run": 0.04, "run_sd": 0.2}
    write_json(tmp_path / "passk" / "answers" / "shared.json", ans)
    write_json(tmp_path / "passk" / "answers" / "flat.json", ans | {"effect": 0.0, "run_sd": 0.0})
    claims = {"up": index.Claim("P", "c", "passk", "shared", 1, seeds={"hop": 6}),
              "down": index.Claim("P", "c", "passk", "shared", -1, seeds=6, power_for=0.5),
              "flat": index.Claim("P", "c", "passk", "flat", 1, seeds=6),
              "gone": index.Claim("P", "c", "passk", "gone", 1, seeds=6)}
    table, m = power.registered_rows(index.Config(claims=claims), tmp_path)
    assert m == 3  # shared, flat and gone, each once
    # 6 seeds: the run term 0.2^2 / 6, the problem term 0.05^2 - 0.04^2 = 0.0009 kept; df 5; alpha 0.05 / 3
    se = (0.2 ** 2 / 6 + 0.0009) ** 0.5
    up, down, flat, gone = table
    assert up["seeds"] == 6 and up["pilot effect (run sd)"] == "+0.300 (sd 0.200)"
    assert up["power for power_for"] == f"{stats.power(se, 5, 0.1, 0.01, 0.05 / 3):.2f} for 0.1 beyond ±0.01"
    assert up["power for the pilot's effect"] == f"{stats.power(se, 5, 0.3, 0.01, 0.05 / 3):.2f}"
    assert down["power for power_for"] == f"{stats.power(se, 5, 0.5, 0.01, 0.05 / 3):.2f} for 0.5 beyond ±0.01"
    assert up["power for the pilot's effect"] != up["power for power_for"].split()[0]
    assert flat["pilot effect (run sd)"] == "pilot effect +0.000, no spread"
    assert gone["pilot effect (run sd)"] == "no pilot answer" and gone["power for power_for"] == ""


def _passk_file(path, edge1, far1, far256, verified=True):
    def cell(p1, p256):
        d = {"pass_at_k": {"1": p1, "256": p256}}
        return d | ({"pass_at_k_answer": {"1": 1.0, "256": 1.0}} if verified else {})
    write_json(path, {"sets": {"edge": cell(edge1, 1.0), "far": cell(far1, far256)}})


def test_bands_hold_at_their_edges_and_fail_beyond(tmp_path, monkeypatch, capsys):
    d = tmp_path / "reports" / "passk" / "data"
    for m, vals in {"b0": (0.05, 0.0, 0.5), "b1": (0.9, 0.0, 0.89),  # per-base edges inclusive, mean 0.475
                    "c0": (0.04, 0.0, 0.1), "c1": (0.5, 0.0, 0.9),  # below 0.05; far pass@256 not below 0.9
                    "e0": (0.5, 0.1, 0.2), "e1": (0.95, 0.1, 0.2)}.items():  # foothold means 0.1 and 0.2 hold
        _passk_file(d / f"{m}.json", *vals)
    params = tmp_path / "params.yaml"
    params.write_text("passk: {bases: [hop, chain], arms: {hop: [b0, b1], chain: [c0, c1], "
                      "exposure base: [e0, e1]}}\n")
    monkeypatch.setattr(sys, "argv", ["bands", "--reports", str(tmp_path / "reports"), "--params", str(params)])
    assert bands.main() == 1
    out = capsys.readouterr().out
    assert out.startswith("verified pass@k")
    said = [line for line in out.splitlines() if line.startswith(("holds", "FAILS"))]
    assert said == [
        "holds  hop: every base's edge pass@1 in [0.05, 0.9] (0.050, 0.900)",
        "holds  hop: mean edge pass@1 0.475 in [0.1, 0.8]",
        "holds  hop: every base's far pass@256 below 0.9 (max 0.890)",
        "FAILS  chain: every base's edge pass@1 in [0.05, 0.9] (0.040, 0.500)",
        "holds  chain: mean edge pass@1 0.270 in [0.1, 0.8]",
        "FAILS  chain: every base's far pass@256 below 0.9 (max 0.900)",
        "FAILS  exposure base: every base's edge pass@1 in [0.05, 0.9] (0.500, 0.950)",
        "holds  exposure base: mean far pass@1 0.100 <= 0.1",
        "holds  exposure base: mean far pass@256 0.200 >= 0.2"]


def test_bands_name_answer_only_data_and_missing_files(tmp_path, monkeypatch, capsys):
    d = tmp_path / "reports" / "passk" / "data"
    _passk_file(d / "b0.json", 0.3, 0.0, 0.5, verified=False)
    params = tmp_path / "params.yaml"
    params.write_text("passk: {bases: [hop], arms: {hop: [b0]}}\n")
    monkeypatch.setattr(sys, "argv", ["bands", "--reports", str(tmp_path / "reports"), "--params", str(params)])
    assert bands.main() == 0 and capsys.readouterr().out.startswith("answer-only pass@k")
    params.write_text("passk: {bases: [hop], arms: {hop: [b0, b1]}}\n")
    assert bands.main() == 2 and "b1.json" in capsys.readouterr().err


def test_bands_fail_beyond_the_mean_and_the_foothold_and_on_an_empty_arm(tmp_path, monkeypatch, capsys):
    d = tmp_path / "reports" / "passk" / "data"
    for m, vals in {"b0": (0.85, 0.0, 0.5), "b1": (0.9, 0.0, 0.5),  # each in band, mean 0.875 above 0.8
                    "e0": (0.5, 0.2, 0.1), "e1": (0.5, 0.1, 0.2)}.items():  # means: pass@1 0.15, pass@256 0.15
        _passk_file(d / f"{m}.json", *vals, verified=m != "e1")
    params = tmp_path / "params.yaml"
    params.write_text("passk: {bases: [hop, none], arms: {hop: [b0, b1], none: [], exposure base: [e0, e1]}}\n")
    monkeypatch.setattr(sys, "argv", ["bands", "--reports", str(tmp_path / "reports"), "--params", str(params)])
    assert bands.main() == 1
    out = capsys.readouterr().out
    assert out.startswith("mixed: some files verified, some answer-only (below: e1)")
    assert [line for line in out.splitlines() if line.startswith(("holds", "FAILS"))] == [
        "holds  hop: every base's edge pass@1 in [0.05, 0.9] (0.850, 0.900)",
        "FAILS  hop: mean edge pass@1 0.875 in [0.1, 0.8]",
        "holds  hop: every base's far pass@256 below 0.9 (max 0.500)",
        "FAILS  none: no bases to check",
        "holds  exposure base: every base's edge pass@1 in [0.05, 0.9] (0.500, 0.500)",
        "FAILS  exposure base: mean far pass@1 0.150 <= 0.1",
        "FAILS  exposure base: mean far pass@256 0.150 >= 0.2"]
    write_json(d / "b1.json", {"sets": {"edge": {"pass_at_k": {"1": 0.5}}}})  # no far set
    assert bands.main() == 2 and "b1: far pass@1, far pass@256" in capsys.readouterr().err


def test_power_registered_counts_a_shared_primary_once_per_margin_and_leaves_an_effect_inside_it(tmp_path):
    ans = {"a": 0.5, "b": 0.505, "effect": 0.005, "ci_lo": 0, "ci_hi": 0, "se": 0.01, "df": 4, "p": 0.5,
           "mde": 0.03, "seeds": 5, "problems": 100, "constant": None, "se_run": 0.01, "run_sd": 0.02}
    write_json(tmp_path / "passk" / "answers" / "small.json", ans)
    claims = {"tight": index.Claim("P", "c", "passk", "small", 1, seeds=5),
              "same": index.Claim("P", "c", "passk", "small", 1, seeds=5),
              "wide": index.Claim("P", "c", "passk", "small", 1, seeds=5, equivalence=0.05, power_for=0.2)}
    table, m = power.registered_rows(index.Config(claims=claims), tmp_path)
    assert m == 2  # one test at ±0.01 (tight and same), one at ±0.05
    se = 0.02 / 5 ** 0.5  # the run term only: se = se_run
    assert table[2]["power for power_for"] == f"{stats.power(se, 4, 0.2, 0.05, 0.05 / 2):.2f} for 0.2 beyond ±0.05"
    assert [r["power for the pilot's effect"] for r in table] == ["—"] * 3  # +0.005 lies inside either margin


def _sets(verified: dict, answer: dict | None, guess: dict | None = None) -> dict:
    """One set's pass@k cells: verified, answer-only (None: the pilot's files, without it), the guess floor."""
    cell = {"pass_at_k": verified, "random_baseline": guess or {"1": 0.0625, "256": 1.0}}
    return cell | ({"pass_at_k_answer": answer} if answer is not None else {})


def test_verified_check_names_the_largest_excess_and_the_guessing_arms_far_numbers(tmp_path, monkeypatch, capsys):
    d = tmp_path / "reports" / "passk" / "data"
    write_json(d / "base_s0.json", {"sets": {  # verified equal to answer-only at k = 1: no excess
        "edge": _sets({"1": 0.3, "256": 0.9}, {"1": 0.3, "256": 0.95}),
        "far": _sets({"1": 0.0, "256": 0.1}, {"1": 0.0625, "256": 1.0})}})
    write_json(d / "far_s0.json", {"sets": {"far": _sets({"1": 0.0, "256": 0.02}, {"1": 0.06, "256": 1.0})}})
    write_json(d / "far_s1.json", {"sets": {"far": _sets({"1": 0.01, "256": 0.04}, {"1": 0.07, "256": 1.0})}})
    params = tmp_path / "params.yaml"
    params.write_text('passk: {arms: {base: [base_s0], "GRPO far": [far_s0, far_s1]}}\n')
    argv = ["verified_check", "--reports", str(tmp_path / "reports"), "--params", str(params)]
    monkeypatch.setattr(sys, "argv", argv)
    assert verified_check.main() == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "GRPO far on far, means over 2 runs: verified pass@1 0.0050, answer-only pass@1 0.0650, guess pass@1 0.0625, "
        "verified pass@256 0.0300, answer-only pass@256 1.0000, guess pass@256 1.0000",
        "holds  verified <= answer-only pass@k in all 4 (model, set) cells of 3 models "
        "(largest excess +0: base_s0 on edge)",
        "holds  GRPO far: verified pass@1 on far 0.0050 <= 0.01 (answer-only 0.0650, guess 0.0625)"]
    monkeypatch.setattr(sys, "argv", argv + ["--near", "0.004"])  # the guessing arm's bound, just below its mean
    assert verified_check.main() == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("FAILS  GRPO far: verified pass@1 on far 0.0050 <= 0.004")
    write_json(d / "far_s1.json", {"sets": {"far": _sets({"1": 0.08, "256": 0.04}, {"1": 0.07, "256": 1.0})}})
    assert verified_check.main() == 1  # verified above answer-only at k = 1, by 0.01
    said = capsys.readouterr().out.splitlines()
    assert said[1] == ("FAILS  verified <= answer-only pass@k in all 4 (model, set) cells of 3 models "
                       "(largest excess +0.01: far_s1 on far)")


def test_verified_check_refuses_answer_only_data_a_missing_run_and_an_unknown_arm(tmp_path, monkeypatch, capsys):
    d = tmp_path / "reports" / "passk" / "data"
    write_json(d / "far_s0.json", {"sets": {"far": _sets({"1": 0.06, "256": 1.0}, None)}})  # the pilot's kind
    params = tmp_path / "params.yaml"
    params.write_text('passk: {arms: {"GRPO far": [far_s0]}}\n')
    argv = ["verified_check", "--reports", str(tmp_path / "reports"), "--params", str(params)]
    monkeypatch.setattr(sys, "argv", argv)
    assert verified_check.main() == 2 and "answer-only data (no verified column): far_s0" in capsys.readouterr().err
    params.write_text('passk: {arms: {"GRPO far": [far_s0, far_s1]}}\n')
    assert verified_check.main() == 2 and "no data for far_s1" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", argv + ["--guessing", "GRPO farr"])
    assert verified_check.main() == 2 and "no arm 'GRPO farr'" in capsys.readouterr().err


def test_design_power_pools_within_base_spread_and_takes_it_from_the_bases_spread():
    import design_power as dp

    # groups [1, 3] and [2, 2, 5]: squares around their means 1 + 1 and 1 + 1 + 4 = 8 on 1 + 2 degrees of freedom
    sd, df = dp.pooled_within([[1.0, 3.0], [2.0, 2.0, 5.0], [7.0]])
    assert df == 3 and sd == pytest.approx(math.sqrt(8 / 3))
    assert dp.between_sd([0.0, 2.0, 4.0], 1.0) == pytest.approx(math.sqrt(4 - 1))  # sample variance 4
    assert dp.between_sd([0.0, 2.0, 4.0], 3.0) == 0.0  # floored: the runs' spread explains it all
    with pytest.raises(ValueError, match="two runs"):
        dp.pooled_within([[1.0], [2.0]])


def test_design_power_reads_the_committed_pilot_once_per_model():
    import design_power as dp
    import yaml

    root = Path(__file__).resolve().parents[1]
    params = yaml.safe_load((root / "reports" / "run1" / "params.yaml").read_text())  # the pilot's arms
    c = dp.components(root, params, "hop", "yue_pass1", 1)
    # the 8 hop bases of the passk study; base_cot's 5 methods seeds and headline run (grpo_s0 is the passk run,
    # read once) give it 6 runs, cot_s1..s4 two each: 5 + 4 degrees of freedom
    assert len(c.values) == 8 and c.within_df == 9 and c.problems == 248
    assert all(v > 0 for v in c.values)  # GRPO on edge errs less than every hop base
    row = dp.design(c, math.log(2), 1)
    assert row["plan"]["seeds"] >= 2 and row["plan"]["power"] >= 0.8
    # the bound puts all the spread between bases, which seeds cannot shrink: it never asks for fewer bases
    assert row["bound"]["power"] >= 0.8 and row["bound"]["bases"] >= row["plan"]["bases"]


def test_cheap_bases_trains_the_recipe_with_its_steps_and_reports_the_band(capsys, monkeypatch):
    import json

    import cheap_bases

    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # params.yaml and data/hop_val_edge.jsonl
    monkeypatch.setattr(cheap_bases.numerics, "pin", lambda *a: None)  # the process's settings stay the suite's
    monkeypatch.setattr(cheap_bases.torch, "set_num_threads", lambda n: None)
    cheap_bases.main(["--steps", "3", "--seeds", "5", "7", "--N", "2", "--count", "3"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["seed"], r["steps"], r["N"], r["problems"]) for r in lines] == [(5, 3, 2, 3), (7, 3, 2, 3)]
    # three steps from fresh weights solve no edge problem: below the band
    assert all(r["val_edge_pass1"] == 0.0 and r["band"] == "out" for r in lines)
    assert cheap_bases.BAND == (0.05, 0.9)  # run 2's admission rule (params.yaml, data: edge)
    with pytest.raises(SystemExit):
        cheap_bases.main(["--steps", "0", "--seeds", "0"])
