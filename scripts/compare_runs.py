"""Compare the workspace's outputs with those of an earlier build recorded in a commit: did a rebuild
reproduce it?

    python scripts/compare_runs.py <commit>      # run in the repository root, after the rebuild

For every stage whose dvc.lock entry changed since <commit> (or is new), each output is matched by its path with
the earlier build's (so a renamed stage is compared too): checkpoints (.pt) are compared by their weights
(the earlier file is read from the DVC cache), every other output by its md5. The RL histories and summaries
are also compared with the earlier ones less the wall-clock fields the earlier code wrote into them
(`time/` columns, `seconds`, `seconds_per_step`), which this code keeps in reports/timing/ only.
"""

import collections
import json
import subprocess
import sys

import torch
import yaml


def show(ref: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{ref}:{path}"], capture_output=True, text=True, check=True).stdout


def same_weights(old_md5: str, path: str) -> bool:
    a = torch.load(f".dvc/cache/files/md5/{old_md5[:2]}/{old_md5[2:]}", weights_only=True)["state_dict"]
    b = torch.load(path, weights_only=True)["state_dict"]
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def untimed_equal(ref: str, path: str) -> bool:
    old, new = show(ref, path), open(path).read()
    if path.endswith(".csv"):
        rows = [line.split(",") for line in old.splitlines()]
        keep = [i for i, c in enumerate(rows[0]) if not c.startswith("time/")]
        return "\n".join(",".join(r[i] for i in keep) for r in rows) + "\n" == new
    o = json.loads(old)
    for key in ("seconds", "seconds_per_step"):
        o.pop(key, None)
    o.get("final", {}).pop("time/seconds", None)
    return o == json.loads(new)


def main(ref: str) -> None:
    old = yaml.safe_load(show(ref, "dvc.lock"))["stages"]
    new = yaml.safe_load(open("dvc.lock"))["stages"]
    rebuilt = [s for s in new if new[s] != old.get(s)]
    # outputs are matched by path, so a stage that was renamed (same outputs) is compared too
    before = {o["path"]: o for stage in old.values() for o in stage.get("outs", [])}
    weights, identical, differ = collections.Counter(), 0, collections.defaultdict(list)
    for stage in rebuilt:
        for out in new[stage].get("outs", []):
            path = out["path"]
            if path not in before:
                differ["(new output)"].append(path)
            elif path.endswith(".pt"):
                weights["same" if same_weights(before[path]["md5"], path) else "DIFFERENT: " + path] += 1
            elif out.get("md5") == before[path].get("md5"):
                identical += 1
            else:
                differ[path.split("/")[1] if path.startswith("reports/") else path].append(path)
    print(f"stages rebuilt since {ref}: {len(rebuilt)} of {len(new)}; new stage names: {len(set(new) - set(old))}; "
          f"stages gone: {len(set(old) - set(new))}")
    print("checkpoints:", dict(weights))
    print("other outputs byte-identical:", identical)
    for kind, paths in sorted(differ.items()):
        print(f"different [{kind}]: {len(paths)}  e.g. {', '.join(paths[:3])}")
    rl = [p for p in differ.get("rl", []) + differ.get("headline", []) if "/rl/" in p or p.startswith("reports/rl/")]
    bad = [p for p in rl if not untimed_equal(ref, p)]
    print(f"RL histories and summaries equal to the earlier ones less their wall-clock fields: {len(rl) - len(bad)}"
          f" of {len(rl)}" + (f"; not: {bad}" if bad else ""))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "HEAD")
