"""The helper scripts' pure parts, on hand-built inputs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import reference_md5s as R  # noqa: E402
import relock  # noqa: E402


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
