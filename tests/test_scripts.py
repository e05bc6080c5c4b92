"""The helper scripts' pure parts, on hand-built inputs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import reference_md5s as R  # noqa: E402


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
