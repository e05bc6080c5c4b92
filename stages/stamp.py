"""Stage `lib_<name>`, `code_task@<task>`, `code_<script>@<task>` or `code_stamp`: write its one output, a stamp,
one `md5  path` line per dep of the stage in dvc.yaml, sorted by path.

    python stages/stamp.py            # as a stage: DVC names it in DVC_STAGE
    python stages/stamp.py <stage>    # by hand

A stamp stands for a module list written once in dvc.yaml (docs/pipeline.md): a stage that depends on the stamp
reruns exactly when a file of the list changes, because then, and only then, the stamp's bytes change.
Standard library and PyYAML only: every stamp stage runs this script, so a reasonrl import here would put that
module into every stamp's dep list (and a change to it would rerun every stamp)."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import yaml

# This script's own stamp: a dep of every other stamp stage, so that a changed stamp format is rewritten
# everywhere, but not a line of their stamps: a change here that keeps their bytes reruns no consumer.
TOOL = "reports/code/stamp.txt"


def stage_paths(dvc: dict, name: str) -> tuple[list[str], str]:
    """(the deps, the one output) of stage `name` of dvc.yaml's parsed `dvc` (anchors resolved by the YAML
    loader); a stamp stage's body interpolates only ${key}."""
    group, _, key = name.partition("@")
    stage = dvc["stages"][group]
    body = stage["do"] if key else stage
    (out,) = (next(iter(o)) if isinstance(o, dict) else o for o in body["outs"])
    return [d.replace("${key}", key) for d in body["deps"]], out.replace("${key}", key)


def stamp(deps: list[str]) -> str:
    lines = (f"{hashlib.md5(Path(p).read_bytes()).hexdigest()}  {p}" for p in sorted(deps) if p != TOOL)
    return "".join(line + "\n" for line in lines)


def write_atomic(path: str, text: str) -> None:
    """Like reasonrl.io.write_text (which this script must not import): no half-written stamp is ever seen."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=Path(path).parent, prefix=f".{Path(path).name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str]) -> int:
    # DVC (>= 3.49) gives every stage command its own address, so dvc.yaml writes one command for all stamps
    name = argv[0] if len(argv) == 1 else os.environ.get("DVC_STAGE")
    if len(argv) > 1 or not name:
        print("usage: python stages/stamp.py [<stage>]  (without it, DVC_STAGE names the stage)", file=sys.stderr)
        return 2
    deps, out = stage_paths(yaml.safe_load(Path("dvc.yaml").read_text()), name)
    write_atomic(out, stamp(deps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
