"""Do two revisions of the code build the same bytes? The smoke DAG (tests/test_pipeline.py: tiny params,
seed 0 of every run family, every stage kind) built from nothing for each, then every output's md5 compared.

    python scripts/smoke_identity.py HEAD~3            # that commit against the working tree
    python scripts/smoke_identity.py A B --keep DIR    # two commits; keep the builds under DIR

The two builds run side by side (one stage at a time each). A refactor that moves code must print
"identical"; any output that differs is listed with its stage. Timing files are left out, and so are the code
stamps (reports/code/, stages/stamp.py): they record the code, which a refactor changes, not what it computes."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from pipeline_util import copy_repo, run, set_params, shrink, thin_repo  # noqa: E402


def checkout(rev: str, dest: Path) -> Path:
    """The files of `rev` (or the working tree for WORKTREE) in a fresh git repo at dest, shrunk and thinned
    to the smoke DAG, without dvc.lock."""
    dest.mkdir(parents=True)
    if rev == "WORKTREE":
        copy_repo(dest)
    else:
        blob = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
        tarfile.open(fileobj=io.BytesIO(blob)).extractall(dest, filter="data")
        for part in ("config",):
            src = ROOT / ".dvc" / part
            if src.exists():
                (dest / ".dvc").mkdir(exist_ok=True)
                (dest / ".dvc" / part).write_text(src.read_text())
        run(["git", "init", "-q"], dest)
        run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A"], dest)
        run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", rev], dest)
    set_params(dest, lambda p: p.update(shrink(p)))
    thin_repo(dest)
    (dest / "dvc.lock").unlink(missing_ok=True)
    return dest


def build(repo: Path, log: Path) -> None:
    env = {"PYTHONPATH": str(repo)}  # the stage scripts import this revision's library, not the installed one
    out = run([sys.executable, "-m", "reasonrl.runner.cli", "repro", "-j", "1"], repo, check=False, env=env)
    log.write_text(out.stdout + out.stderr)


def outs(repo: Path) -> dict[str, str]:
    """{output path: md5} of every stage in dvc.lock, timing files and code stamps left out."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    found = {}
    for stage, entry in lock.items():
        for o in entry.get("outs", []):
            if not o["path"].startswith(("reports/timing/", "reports/code/")):
                found[f"{stage}: {o['path']}"] = o.get("md5")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b", nargs="?", default="WORKTREE")
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="smoke_identity_"))
    repos = [checkout(rev, base / name) for rev, name in ((args.a, "a"), (args.b, "b"))]
    threads = [threading.Thread(target=build, args=(r, base / f"{r.name}.log")) for r in repos]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [outs(r) for r in repos]
    print(f"{args.a}: {len(got[0])} outputs; {args.b}: {len(got[1])} outputs (logs in {base})")
    differ = sorted(k for k in set(got[0]) | set(got[1]) if got[0].get(k) != got[1].get(k))
    for k in differ:
        print(f"  differs: {k}  {got[0].get(k)} -> {got[1].get(k)}")
    print("identical" if not differ else f"{len(differ)} outputs differ")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
