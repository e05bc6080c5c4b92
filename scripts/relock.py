"""Record in dvc.lock a code change that cannot change any output, without rerunning the stages.

    python scripts/relock.py comments reasonrl/exact.py reasonrl/rl/train.py [--rev HEAD]
    python scripts/relock.py deps
    python scripts/relock.py prune --dry     # what it would drop and print; writes nothing
    python scripts/relock.py prune | xargs -r git rm -q --ignore-unmatch

`comments`: for files whose edit changed only comments. A comment changes a file's md5, so DVC would
rerun every stage that lists the file, although no output can change. Each file's syntax tree (`ast.dump`,
which holds no comments) at `--rev` is compared with the working copy's; only when they are equal is
the file's md5 and size replaced in every dvc.lock dep entry. An edited docstring is part of the tree
and is refused like any other code change.

`deps`: after code moved between modules (dvc.yaml's code deps changed with it, tests/test_deps.py), and
only after `python scripts/smoke_identity.py <rev before>` printed "identical": every stage's code deps
in dvc.lock (reasonrl/ and stages/ files, and the code stamps reports/code/*.txt) become those dvc.yaml now
lists, with their md5s; a data, model or report dep dvc.yaml no longer lists is dropped (it moved into a
code stamp), the others, params and outs are kept as they are. Run the stamp stages first (`dvc repro -s`
each, cheap: they hash files): their own entries are DVC's, and the stamps must be current. dvc.lock is
written with DVC's own YAML writer.

`prune`: after stages left dvc.yaml. `dvc repro -s`, which `reasonrl repro` runs per stage, leaves a removed
stage's dvc.lock entry (and its outputs in git) in place, and `dvc remove` can no longer name the stage. The
entries of stages dvc.yaml no longer defines are dropped; the outputs that only they recorded are printed, one
per line, for `git rm`. It writes dvc.lock without DVC's repo lock: not while `reasonrl repro` runs there
(`--dry` is safe at any time)."""

from __future__ import annotations

import argparse
import ast
import hashlib
import subprocess
import sys
from pathlib import Path

from reasonrl.runner import dvc_adapter

LOCK = "dvc.lock"
# a code stamp stands for modules: a dep of the same kind (stages/stamp.py, docs/pipeline.md)
CODE = ("reasonrl/", "stages/", "reports/code/")


def same_tree(path: str, rev: str) -> bool:
    old = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout
    return ast.dump(ast.parse(old)) == ast.dump(ast.parse(Path(path).read_text()))


def file_entry(path: str) -> dict:
    data = Path(path).read_bytes()
    return {"path": path, "hash": "md5", "md5": hashlib.md5(data).hexdigest(), "size": len(data)}


def comments(files: list[str], rev: str) -> int:
    changed = [f for f in files if not same_tree(f, rev)]
    if changed:
        print(f"error: {', '.join(changed)}: the code changed, not only comments; let DVC rerun its stages",
              file=sys.stderr)
        return 2
    return rewrite(lambda stage, deps: [file_entry(d["path"]) if d["path"] in files else d for d in deps])


def relocked(stage: str, declared: list[str], old: list[dict]) -> list[dict]:
    """Stage `stage`'s dvc.lock deps `old` with the code deps dvc.yaml now lists (`declared`) at their current md5s,
    without the deps it no longer lists; a declared dep that is neither code nor in `old` is an error."""
    kept = [d for d in old if not d["path"].startswith(CODE) and d["path"] in declared]
    code = [file_entry(p) for p in declared if p.startswith(CODE)]
    missing = set(declared) - {d["path"] for d in kept + code}
    if missing:  # a new input is no code move: DVC must run the stage
        raise SystemExit(f"error: {stage}: {', '.join(sorted(missing))} not in {LOCK}; run the stage")
    return sorted(kept + code, key=lambda d: d["path"])


def deps() -> int:
    declared = dvc_adapter.stage_deps(".")
    return rewrite(lambda stage, old: relocked(stage, declared[stage], old), only=set(declared))


def pruned(stages: dict, defined: set[str]) -> tuple[dict, list[str]]:
    """`stages` (dvc.lock's) without the stages not in `defined`, and the outputs only those recorded."""
    kept = {name: entry for name, entry in stages.items() if name in defined}
    owned = {o["path"] for entry in kept.values() for o in entry.get("outs", [])}
    orphans = [o["path"] for name, entry in stages.items() if name not in defined
               for o in entry.get("outs", []) if o["path"] not in owned]
    return kept, sorted(set(orphans))


def prune(dry: bool = False) -> int:
    defined = set(dvc_adapter.stage_deps("."))
    lock = dvc_adapter.load_yaml_file(LOCK)
    kept, orphans = pruned(lock["stages"], defined)
    dropped = sorted(set(lock["stages"]) - set(kept))
    if not dry:
        lock["stages"] = kept
        dvc_adapter.dump_yaml_file(LOCK, lock)
    verb = "would be dropped" if dry else "dropped"
    print(f"{len(dropped)} stages {verb} from {LOCK}: {', '.join(dropped) or 'none'}", file=sys.stderr)
    if orphans:
        print("\n".join(orphans))
    return 0


def rewrite(update, only: set[str] | None = None) -> int:
    """Apply update(stage, its dvc.lock deps) to every stage of dvc.lock, or to those of `only`."""
    lock = dvc_adapter.load_yaml_file(LOCK)
    count = 0
    for stage, entry in lock["stages"].items():
        if only is not None and stage not in only:
            continue
        new = update(stage, entry["deps"])
        count += new != entry["deps"]
        entry["deps"] = new
    dvc_adapter.dump_yaml_file(LOCK, lock)
    print(f"{count} stages' deps updated in {LOCK}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("comments")
    c.add_argument("files", nargs="+")
    c.add_argument("--rev", default="HEAD")
    c.set_defaults(run=lambda a: comments(a.files, a.rev))
    sub.add_parser("deps").set_defaults(run=lambda a: deps())
    p = sub.add_parser("prune")
    p.add_argument("--dry", action="store_true", help="print what would be dropped; write nothing")
    p.set_defaults(run=lambda a: prune(a.dry))
    args = ap.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
