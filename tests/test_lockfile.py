"""reasonrl.runner.lockfile writes exactly the dvc.lock that DVC's own round-trip update writes."""

from __future__ import annotations

import copy
import hashlib
import io
import os
import pickle
import subprocess
import sys
import types

import pytest
from dvc.utils.serialize import _yaml as dvc_yaml

from reasonrl.runner import lockfile
from reasonrl.runner.parallel import _DVC_MAIN


def _entry(i: int) -> dict:
    """A lock entry with what a real one holds: wrapped long strings, None, keys YAML would read as bools."""
    return {
        "cmd": f"python stages/rl.py runs s{i}",
        "deps": [{"path": f"models/base_{i}.pt", "hash": "md5", "md5": f"{i:032x}", "size": 1000 + i}],
        "params": {"params.yaml": {"rl.lr": 1e-4 * (i + 1), "model": None, "runs": {"on": [f"a{i}"], "off": []},
                                   "title": "KL to the start in the reward (k1, beta 0.05, after the advantage) "
                                            f"at lr 1e-3, run {i}, with the methods' settings"}},
        "outs": [{"path": f"reports/rl/s{i}.json", "hash": "md5", "md5": f"{i + 7:032x}", "size": 10 * i}],
    }


def _dvc_text(data: dict) -> str:
    buf = io.StringIO()
    dvc_yaml._dump(data, buf)
    return buf.getvalue()


@pytest.fixture
def lock() -> tuple[str, dict]:
    data = {"schema": "2.0", "stages": {f"rl@s{i}": _entry(i) for i in range(6)}}
    return _dvc_text(data), data


def test_unchanged_lock_keeps_its_bytes(lock):
    text, data = lock
    assert lockfile.splice(text, data, copy.deepcopy(data)) == text


@pytest.mark.parametrize("name", ["rl@s0", "rl@s3", "rl@s5"])
def test_a_changed_entry_gives_dvcs_full_dump(lock, name):
    text, data = lock
    after = copy.deepcopy(data)
    after["stages"][name]["outs"][0]["md5"] = "f" * 32
    after["stages"][name]["params"]["params.yaml"]["title"] += " and a longer title that wraps once more"
    out = lockfile.splice(text, data, after)
    assert out == _dvc_text(after) != text


def test_appended_and_several_changed_entries(lock):
    text, data = lock
    after = copy.deepcopy(data)
    after["stages"]["rl@s1"]["cmd"] += " --again"
    after["stages"]["rl@s4"]["deps"].append({"path": "data/val.jsonl", "hash": "md5", "md5": "0" * 32, "size": 1})
    after["stages"]["report"] = _entry(9)
    assert lockfile.splice(text, data, after) == _dvc_text(after)


@pytest.mark.parametrize("change", ["remove", "reorder", "schema"])
def test_changes_it_cannot_splice_fall_back(lock, change):
    text, data = lock
    after = copy.deepcopy(data)
    if change == "remove":
        del after["stages"]["rl@s2"]
    elif change == "reorder":
        after["stages"] = dict(reversed(after["stages"].items()))
    else:
        after["schema"] = "3.0"
    assert lockfile.splice(text, data, after) is None


def _modify(modify_yaml, path, edit) -> str:
    with modify_yaml(str(path)) as data:
        edit(data)
    return path.read_text()


@pytest.mark.parametrize("edit", [
    lambda d: d["stages"]["rl@s2"].update(cmd="python stages/rl.py runs other"),
    lambda d: d["stages"].pop("rl@s2"),
    lambda d: d["stages"].update({"new@x": _entry(3)}),
], ids=["change", "remove", "add"])
@pytest.mark.parametrize("kept", [False, True], ids=["copied", "loaded twice"])  # how `before` is made
def test_modify_lock_writes_what_dvc_writes(lock, tmp_path, edit, kept):
    text, _ = lock
    ours, theirs = tmp_path / "a" / "dvc.lock", tmp_path / "b" / "dvc.lock"
    for p in (ours, theirs):
        p.parent.mkdir()
        p.write_text(text)
    if kept:
        (ours.parent / ".dvc" / "tmp").mkdir(parents=True)
        lockfile.parse_kept(text, str(ours))
    assert _modify(lockfile.modify_lock, ours, edit) == _modify(dvc_yaml.modify_yaml, theirs, edit)


def test_stage_blocks_are_found_by_line():
    text = "schema: '2.0'\nstages:\n  a:\n    cmd: x\n    outs:\n    - path: y\n  b@1:\n    cmd: z\n\nother: 1\n"
    head, starts, end = lockfile._stage_blocks(text)
    assert text[:head] == "schema: '2.0'\nstages:\n" and text[end:] == "\nother: 1\n"  # a blank line ends it
    assert [text[s:s + 5] for s in starts] == ["  a:\n", "  b@1"]
    assert lockfile._stage_blocks("stages: {}\n") is None and lockfile._stage_blocks("x:\n  stages:\n") is None
    head, starts, end = lockfile._stage_blocks("stages:\n  a:\n    cmd: x")  # no newline at the end
    assert (head, starts, end) == (8, [8], 23)
    assert lockfile._stage_blocks("stages:\n  a:\n  - x\n  b: 1\n")[1] == [8, 19]  # a list item starts none


def test_a_key_after_the_stages_keeps_its_bytes(lock):
    _, data = lock
    before = {**data, "later": {"a": [1, 2]}}
    after = copy.deepcopy(before)
    after["stages"]["rl@s3"]["cmd"] += " --again"
    assert lockfile.splice(_dvc_text(before), before, after) == _dvc_text(after)


def test_a_new_lock_file(tmp_path):
    def edit(d):
        d.update({"schema": "2.0", "stages": {"a": _entry(1)}})
    ours, theirs = tmp_path / "dvc.lock", tmp_path / "other.lock"
    assert _modify(lockfile.modify_lock, ours, edit) == _modify(dvc_yaml.modify_yaml, theirs, edit)


def test_install_patches_lock_files_and_the_params_loader_only(monkeypatch):
    import dvc.dvcfile as dvcfile
    import dvc.utils.serialize as serialize
    import dvc.utils.strictyaml as strictyaml

    for suffix in (".yaml", ".yml", ".json"):  # put back after the test: install() sets the first two
        monkeypatch.setitem(serialize.LOADERS, suffix, serialize.LOADERS[suffix])
    calls = []
    monkeypatch.setattr(dvcfile, "modify_yaml", lambda path, fs=None: calls.append(("dvc", path)))
    monkeypatch.setattr(lockfile, "modify_lock", lambda path, fs=None: calls.append(("ours", path)))
    monkeypatch.setattr(strictyaml, "parse_yaml", lambda text, path, typ="safe": calls.append(("parse", path, typ)))
    monkeypatch.setattr(lockfile, "parse_kept", lambda text, path: calls.append(("ours", path)))
    check = lambda *a, **k: None  # noqa: E731
    monkeypatch.setattr(strictyaml, "validate", check)
    lockfile.install()
    lockfile.install()  # a second call does not wrap twice
    assert strictyaml.validate.__wrapped__ is check and strictyaml.validate.__installed__
    dvcfile.modify_yaml("dir/dvc.lock")
    dvcfile.modify_yaml("dir/dvc.yaml")
    strictyaml.parse_yaml("", "dir/dvc.lock")
    strictyaml.parse_yaml("", "dir/dvc.lock", typ="rt")  # a round-trip read keeps DVC's parser
    strictyaml.parse_yaml("", "dir/dvc.yaml")
    assert calls == [("ours", "dir/dvc.lock"), ("dvc", "dir/dvc.yaml"), ("ours", "dir/dvc.lock"),
                     ("parse", "dir/dvc.lock", "rt"), ("parse", "dir/dvc.yaml", "safe")]
    assert serialize.LOADERS[".yaml"] is serialize.LOADERS[".yml"] is lockfile.load_yaml
    assert serialize.LOADERS[".json"] is serialize.load_json and serialize.LOADERS[".toml"] is serialize.load_toml


def test_reading_patches_the_reads_only_and_puts_dvc_back(monkeypatch):
    import dvc.dvcfile as dvcfile
    import dvc.utils.serialize as serialize
    import dvc.utils.strictyaml as strictyaml

    calls = []
    parse = lambda text, path, typ="safe": calls.append(("parse", path, typ))  # noqa: E731
    monkeypatch.setattr(strictyaml, "parse_yaml", parse)
    monkeypatch.setattr(lockfile, "parse_kept", lambda text, path: calls.append(("ours", path)))
    loaders, modify, check = dict(serialize.LOADERS), dvcfile.modify_yaml, strictyaml.validate
    with lockfile.reading():
        assert strictyaml.validate.__wrapped__ is check
        strictyaml.parse_yaml("", "dir/dvc.lock")
        strictyaml.parse_yaml("", "dir/dvc.lock", typ="rt")
        strictyaml.parse_yaml("", "dir/dvc.yaml")
        assert serialize.LOADERS[".yaml"] is serialize.LOADERS[".yml"] is lockfile.load_yaml
        assert dvcfile.modify_yaml is modify  # writes as before
        with lockfile.reading():  # nested: no second wrapper, and the outer one stays until its own end
            inner = strictyaml.parse_yaml
        assert strictyaml.parse_yaml is inner
    assert calls == [("ours", "dir/dvc.lock"), ("parse", "dir/dvc.lock", "rt"), ("parse", "dir/dvc.yaml", "safe")]
    assert strictyaml.parse_yaml is parse and dict(serialize.LOADERS) == loaders and strictyaml.validate is check
    with pytest.raises(RuntimeError), lockfile.reading():  # put back when the body fails, too
        raise RuntimeError
    assert strictyaml.parse_yaml is parse and dict(serialize.LOADERS) == loaders
    a, b = lockfile.reading(), lockfile.reading()  # two threads' plans overlapping: a in, b in, a out, b out
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    assert strictyaml.parse_yaml is parse and dict(serialize.LOADERS) == loaders and strictyaml.validate is check


def test_install_inside_reading_stays_installed(monkeypatch):
    import dvc.dvcfile as dvcfile
    import dvc.utils.serialize as serialize
    import dvc.utils.strictyaml as strictyaml

    for suffix in (".yaml", ".yml"):
        monkeypatch.setitem(serialize.LOADERS, suffix, serialize.LOADERS[suffix])
    parse = lambda text, path, typ="safe": ("parse", path)  # noqa: E731
    monkeypatch.setattr(strictyaml, "parse_yaml", parse)
    monkeypatch.setattr(dvcfile, "modify_yaml", dvcfile.modify_yaml)
    monkeypatch.setattr(lockfile, "parse_kept", lambda text, path: ("ours", path))
    monkeypatch.setattr(strictyaml, "validate", strictyaml.validate)
    with lockfile.reading():
        lockfile.install()
    assert strictyaml.validate.__installed__  # the check stays too
    assert strictyaml.parse_yaml("", "dvc.lock") == ("ours", "dvc.lock")  # still read through the kept parse
    assert strictyaml.parse_yaml.__wrapped__ is parse  # wrapping DVC's reader, not reading()'s
    assert serialize.LOADERS[".yaml"] is lockfile.load_yaml
    with lockfile.reading():  # and a later plan changes nothing of it
        pass
    assert strictyaml.parse_yaml("", "dvc.lock") == ("ours", "dvc.lock")


def test_a_params_file_is_parsed_once_then_read_from_the_kept_parse(tmp_path, monkeypatch):
    from dvc.fs import LocalFileSystem
    from dvc.utils.serialize import load_yaml as dvc_load_yaml

    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    path = tmp_path / "params.yaml"
    path.write_text("lr: 3e-06\nruns: {a: [1, 2]}\nname: x  # a comment\n")
    data = dvc_load_yaml(str(path))
    assert data == {"lr": 3e-06, "runs": {"a": [1, 2]}, "name": "x"}  # YAML 1.2, as DVC reads it
    assert lockfile.load_yaml(str(path), fs=LocalFileSystem()) == data
    kept = tmp_path / ".dvc" / "tmp" / "reasonrl-params.yaml.pickle"
    assert lockfile.kept_name(str(path)) == kept.name and kept.exists()
    monkeypatch.setattr(dvc_yaml, "parse_yaml", lambda *a, **k: pytest.fail("parsed again"))
    first = lockfile.load_yaml(str(path))
    first["lr"] = 1.0  # a caller that edits what it read does not edit the kept parse
    assert lockfile.load_yaml(str(path)) == data
    with pytest.raises(FileNotFoundError):  # DVC's own reading, errors included
        lockfile.load_yaml(str(tmp_path / "missing.yaml"))
    # a git revision's or DVC's own file system says protocol "local" too: only the workspace's files are kept
    assert lockfile._workspace(None) and lockfile._workspace(LocalFileSystem())
    assert not lockfile._workspace(types.SimpleNamespace(protocol="local"))


@pytest.fixture
def repo_lock(lock, tmp_path) -> tuple[object, str, dict]:
    """A dvc.lock in a folder with .dvc/tmp, where its parse is kept."""
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    path = tmp_path / "dvc.lock"
    path.write_text(lock[0])
    return path, *lock


def test_a_lock_text_is_parsed_once_then_read_from_the_kept_parse(repo_lock, monkeypatch):
    path, text, data = repo_lock
    assert lockfile.parse_kept(text, str(path)) == dvc_yaml.parse_yaml(text, str(path)) == data
    kept = path.parent / ".dvc" / "tmp" / lockfile.PARSED
    assert kept.exists()

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed again")

    monkeypatch.setattr(dvc_yaml, "parse_yaml", no_parse)
    assert lockfile.parse_kept(text, str(path)) == data  # the same text: the kept parse
    other = text.replace("stages/rl.py runs s1", "stages/rl.py runs other")
    with pytest.raises(AssertionError, match="parsed again"):  # another text is parsed, never looked up
        lockfile.parse_kept(other, str(path))
    monkeypatch.undo()
    kept.write_bytes(b"torn")
    assert lockfile.parse_kept(text, str(path)) == data  # an unreadable kept parse: DVC's parser
    digest = hashlib.sha256(text.encode()).hexdigest()
    kept.write_bytes(pickle.dumps((f"dvc=0.1,ruamel.yaml=0.1:{digest}", {"stages": {}})))
    assert lockfile.parse_kept(text, str(path)) == data  # kept by other parsers' versions: parsed anew
    assert [p.name for p in kept.parent.iterdir()] == [lockfile.PARSED]  # no temporary file left behind


def test_a_parse_pickle_cannot_keep_is_still_dvcs_parse(tmp_path):
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    text = "a: " + "[" * 1500 + "]" * 1500 + "\n"  # deeper than pickle's recursion
    node, depth = lockfile.parse_kept(text, str(tmp_path / "params.yaml"))["a"], 0
    while node:  # compared level by level: == itself would recurse too deep
        node, depth = node[0], depth + 1
    assert depth == 1499 and list((tmp_path / ".dvc" / "tmp").iterdir()) == []


def test_no_kept_parse_without_a_dvc_tmp_folder(lock, tmp_path):
    text, data = lock
    assert lockfile.parse_kept(text, str(tmp_path / "dvc.lock")) == data
    assert not list(tmp_path.rglob(lockfile.PARSED))


def test_an_update_keeps_the_parse_of_the_text_it_wrote(repo_lock, monkeypatch):
    path, text, _ = repo_lock
    new = _modify(lockfile.modify_lock, path, lambda d: d["stages"].update({"new@x": _entry(3)}))
    monkeypatch.setattr(dvc_yaml, "parse_yaml", lambda *a, **k: pytest.fail("parsed again"))
    kept = lockfile.parse_kept(new, str(path))
    monkeypatch.undo()
    assert kept == dvc_yaml.parse_yaml(new, str(path)) and "new@x" in kept["stages"]


def test_dvcs_dump_of_the_committed_lock_parses_back_to_the_same_data():
    # what an update keeps rests on this: the text DVC's dumper writes parses to the data it dumped
    from pipeline_util import ROOT

    data = dvc_yaml.parse_yaml((ROOT / "dvc.lock").read_text(), "dvc.lock")
    assert len(data["stages"]) > 100 and dvc_yaml.parse_yaml(_dvc_text(data), "dvc.lock") == data


@pytest.mark.slow
def test_repro_through_the_patched_dvc_writes_the_same_lock(tmp_path):
    """`dvc repro` as `reasonrl repro` runs it and as a user runs it leave the same dvc.lock bytes."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    stages = "".join(f"  s{i}:\n    cmd: echo {i} > out{i}.txt\n    deps: [in.txt]\n    params: [p{i}]\n"
                     f"    outs: [out{i}.txt]\n" for i in range(3))
    locks = []
    for how in ("dvc", "reasonrl"):
        repo = tmp_path / how
        repo.mkdir()
        (repo / "in.txt").write_text("x\n")
        (repo / "params.yaml").write_text("p0: 1\np1: 3e-06\np2: {a: [1, 2]}\n")
        (repo / "dvc.yaml").write_text("stages:\n" + stages)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run(["dvc", "init", "-q"], cwd=repo, check=True, env=env)
        for stage in ("s1", "s0", "s2", "s0", "s1"):
            if stage == "s1" and (repo / "dvc.lock").exists():  # the last update changes what it read
                (repo / "params.yaml").write_text("p0: 1\np1: 4e-06\np2: {a: [1, 2]}\n")
            main = ["dvc"] if how == "dvc" else [sys.executable, "-c", _DVC_MAIN]
            subprocess.run([*main, "repro", "-f", "-s", stage], cwd=repo, check=True, env=env,
                           capture_output=True)
        locks.append((repo / "dvc.lock").read_text())
    assert locks[0] == locks[1] and "s2:" in locks[0]
    key, kept = pickle.loads((tmp_path / "reasonrl" / ".dvc" / "tmp" / lockfile.PARSED).read_bytes())
    assert key.endswith(":" + hashlib.sha256(locks[1].encode()).hexdigest())
    assert kept == dvc_yaml.parse_yaml(locks[1], "dvc.lock") and "p1: 4e-06" in locks[1]
    assert (tmp_path / "reasonrl" / ".dvc" / "tmp" / lockfile.kept_name("params.yaml")).exists()
    # the last update marked what it wrote
    assert lockfile.known_valid(str(tmp_path / "reasonrl" / "dvc.lock"), locks[1])


# ---- the lock's schema check, once per text -------------------------------------------------------------

@pytest.fixture
def checks(monkeypatch) -> list:
    """DVC's `validate` counting its calls, behind `_checked_once` as `install` puts it."""
    import dvc.utils.strictyaml as strictyaml

    calls, plain = [], strictyaml.validate

    def counted(data, schema, text=None, path=None, rev=None):
        calls.append(os.path.basename(path or ""))
        return plain(data, schema, text=text, path=path, rev=rev)

    monkeypatch.setattr(strictyaml, "validate", lockfile._checked_once(counted))
    return calls


def _load(path, schema=None):
    import dvc.utils.strictyaml as strictyaml
    from dvc.dvcfile import Lockfile

    return strictyaml.load(str(path), schema or Lockfile.SCHEMA)[0]


def test_a_lock_text_is_checked_against_dvcs_schema_once(repo_lock, checks):
    from dvc.utils.strictyaml import YAMLValidationError

    path, text, data = repo_lock
    assert _load(path) == data and _load(path) == data
    assert checks == ["dvc.lock"] and lockfile.known_valid(str(path), text)
    import dvc.utils.strictyaml as strictyaml
    from dvc.dvcfile import Lockfile

    strictyaml.load(str(path), Lockfile.SCHEMA, round_trip=True)  # a round-trip parse: always checked
    assert checks == ["dvc.lock"] * 2
    checks.pop()
    from dvc.schema import COMPILED_MULTI_STAGE_SCHEMA
    with pytest.raises(YAMLValidationError):  # the same text against another schema: checked, and fails
        _load(path, COMPILED_MULTI_STAGE_SCHEMA)
    checks.pop()
    path.write_text(text.replace("runs s1", "runs other"))  # an edit: checked again, then known
    _load(path), _load(path)
    assert checks == ["dvc.lock"] * 2
    path.write_text(text.replace("schema: '2.0'", "schema: '3.0'"))  # one that fails: DVC's error, every time
    for _ in range(2):
        with pytest.raises(YAMLValidationError):
            _load(path)
    assert checks == ["dvc.lock"] * 4 and not lockfile.known_valid(str(path), path.read_text())
    other = path.parent / "dvc.yaml"  # another file or schema: DVC's check, every time
    other.write_text("stages: {a: {cmd: echo}}\n")
    _load(other, COMPILED_MULTI_STAGE_SCHEMA), _load(other, COMPILED_MULTI_STAGE_SCHEMA)
    assert checks == ["dvc.lock"] * 4 + ["dvc.yaml"] * 2


def test_an_update_from_a_known_valid_text_checks_only_its_entries(repo_lock, checks, monkeypatch):
    from dvc.utils.strictyaml import YAMLValidationError

    path, text, _ = repo_lock
    _load(path)
    import voluptuous

    seen, real = [], voluptuous.Schema

    def recording(schema):  # the entries `_entries_valid` hands to voluptuous
        compiled = real(schema)
        return lambda data: seen.append(sorted(data)) or compiled(data)

    monkeypatch.setattr(voluptuous, "Schema", recording)
    new = _modify(lockfile.modify_lock, path, lambda d: d["stages"].update({"new@x": _entry(3)}))
    assert seen == [["new@x"]] and lockfile.known_valid(str(path), new)
    assert _load(path)["stages"]["new@x"] == _entry(3) and checks == ["dvc.lock"]  # not checked again
    bad = _modify(lockfile.modify_lock, path, lambda d: d["stages"]["rl@s1"].update(cmd=5))  # not str nor list
    assert not lockfile.known_valid(str(path), bad)
    with pytest.raises(YAMLValidationError):
        _load(path)
    path.write_text(text)  # known valid no more (the mark is of the last valid text only): nothing marked
    good = _modify(lockfile.modify_lock, path, lambda d: d["stages"].update({"new@y": _entry(4)}))
    assert not lockfile.known_valid(str(path), good)
    _load(path)  # checked: the third time
    removed = _modify(lockfile.modify_lock, path, lambda d: d["stages"].pop("rl@s2"))  # a full dump
    assert not lockfile.known_valid(str(path), removed)
    assert checks == ["dvc.lock"] * 3
