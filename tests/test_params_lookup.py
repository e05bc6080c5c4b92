"""The params lookup (reasonrl/runner/params_lookup.py) answers what dpath answers, errors included, and DVC's
params reader goes through it once patched."""

from __future__ import annotations

import pytest

from reasonrl.runner import lockfile, params_lookup

PARAMS = {"method": "grpo", "rl": {"lr": 3e-06, "init": None, "arms": ["a", {"b": 1}]}, "by_lr": {3e-06: "small"},
          "runs": {"grpo_s0": {"seed": 0, "tags": []}, "grpo_s1": {"seed": 1}, "gr?po": {"seed": 2}, "grapo": {}}}


def _outcome(get, obj, *args, **kwargs):
    """What a lookup gives: ("value", the very object) or ("error", its type and text)."""
    try:
        return "value", id(found := get(obj, *args, **kwargs)), found
    except Exception as e:  # noqa: BLE001  (the errors must be dpath's too)
        return "error", type(e), str(e)


@pytest.mark.parametrize(("obj", "glob"), [
    (PARAMS, "method"), (PARAMS, "rl"), (PARAMS, "rl.lr"), (PARAMS, "rl.init"), (PARAMS, "runs.grpo_s0"),
    (PARAMS, "runs.grpo_s0.tags"), (PARAMS, ".rl.lr"),  # a leading separator is dropped
    (PARAMS, "missing"), (PARAMS, "rl.lr.x"), (PARAMS, "method.x"), (PARAMS, "runs.grpo_s2"),
    (PARAMS, "rl.arms.0"), (PARAMS, "rl.arms.1.b"), (PARAMS, "rl.arms.-1"), (PARAMS, "rl.arms.01"),  # lists
    (PARAMS, "rl.arms.a"), (PARAMS, ["rl", "lr"]),
    (PARAMS, "runs.grpo_s*"), (PARAMS, "runs.*.seed"), (PARAMS, "**.lr"),  # patterns
    (PARAMS, "runs.gr?po"),  # a key with a pattern's character, and a second key it matches: dpath's error
    (PARAMS, "rl..lr"), (PARAMS, ""), (PARAMS, "/"), (PARAMS, "."), ({"/": 1, "a": 2}, "/"),  # "/": the whole
    ({"a": {1: "int key", "b": 2}}, "a.1"), ({"a": {True: "bool key"}}, "a.1"), ({1.5: "x"}, "1.5"),
    ({"a": 1, "b": {"": "empty key"}}, "a"),  # dpath refuses a file with an empty key anywhere
    ({"a": 1, "d": __import__("datetime").date(2026, 12, 6)}, "a"), ({"a": (1, 2)}, "a.0"),
    ({"a": {1: "int key", "1": "str key"}}, "a.1"), ({"a": {True: "bool", "1": "str"}}, "a.1"),  # dpath's error
    ({"a": {3e-06: "lr", "b": 2}}, "a.b"), ({"a": {3e-06: "lr"}}, "a.3e-06"),  # a float key never matches
    ({"a": 1, "t": ({"": 0},)}, "a"), ({"a": 1, "l": [{"": 0}]}, "a"),  # empty keys in a tuple, a list
])
def test_param_get_answers_what_dpath_answers(obj, glob):
    import dpath

    assert _outcome(params_lookup.param_get, obj, glob, separator=".") == _outcome(dpath.get, obj, glob, separator=".")
    ours = _outcome(params_lookup.param_get, obj, glob, separator=".", default="dflt")
    assert ours == _outcome(dpath.get, obj, glob, separator=".", default="dflt")


def _nested(levels: int) -> dict:
    out = node = {"a": 1}
    for _ in range(levels):
        node["n"] = node = {}
    return out


def test_param_get_answers_what_dpath_answers_on_odd_separators_and_depths():
    import dpath
    from dvc.utils.serialize._yaml import parse_yaml

    looped = parse_yaml("a: 1\nb: &x {c: *x}\n", "params.yaml")  # a YAML alias inside itself
    assert looped["b"]["c"] is looped["b"]
    cases = [({"a": 1}, "", ""), ({"a": 1}, "/", ""), ({"a": 1}, "a", ""), ({"a": {"b": 1}}, "a/b", "/"),
             ({"a": {"b": 1}}, "a::b", "::"), (_nested(params_lookup.DEPTH - 1), "a", "."),
             (_nested(2000), "a", "."), (looped, "a", ".")]  # dpath's walk: RecursionError
    get = params_lookup.param_get
    for obj, glob, sep in cases:
        assert _outcome(get, obj, glob, separator=sep) == _outcome(dpath.get, obj, glob, separator=sep)


def test_param_get_indexes_a_plain_key_without_walking_the_file(monkeypatch):
    import dpath.segments

    monkeypatch.setattr(dpath.segments, "fold", _no_walk)
    assert params_lookup.param_get(PARAMS, "runs.grpo_s0", separator=".") is PARAMS["runs"]["grpo_s0"]
    assert params_lookup.param_get(PARAMS, "rl.init", separator=".") is None
    assert params_lookup.param_get(PARAMS, ".rl.lr", separator=".") == 3e-06
    assert params_lookup.param_get(_nested(params_lookup.DEPTH - 1), "a", separator=".") == 1
    with pytest.raises(LookupError, match="walked"):  # deeper: dpath's
        params_lookup.param_get(_nested(params_lookup.DEPTH + 1), "a", separator=".")
    with pytest.raises(LookupError, match="walked"):  # a list, a pattern, a missing key: dpath's walk
        params_lookup.param_get(PARAMS, "rl.arms.0", separator=".")


def _no_walk(*args):
    raise LookupError("walked")


def test_dvc_reads_params_through_param_get_once_patched(tmp_path, monkeypatch):
    import dpath
    import dpath.segments
    import dvc.dependency.param as param
    import dvc.dvcfile as dvcfile
    import dvc.utils.serialize as serialize
    import dvc.utils.strictyaml as strictyaml

    monkeypatch.setattr(param, "dpath", dpath)
    path = tmp_path / "params.yaml"
    path.write_text("method: grpo\nrl: {lr: 3e-06, arms: [a, b]}\nruns: {s0: {seed: 0}}\n")
    from dvc.fs import LocalFileSystem

    keys = ["method", "rl.lr", "rl.arms.1", "runs.s0", "runs.s1", "runs.*"]
    before = param.read_param_file(LocalFileSystem(), str(path), keys, flatten=True)
    assert before == {"method": "grpo", "rl.lr": 3e-06, "rl.arms.1": "b", "runs.s0": {"seed": 0},
                      "runs.*": {"seed": 0}}
    with lockfile.reading():
        assert isinstance(param.dpath, params_lookup.DpathProxy)
        with lockfile.reading():  # nested: the outer one puts dpath back
            pass
        assert isinstance(param.dpath, params_lookup.DpathProxy)
    assert param.dpath is dpath  # put back
    for suffix in (".yaml", ".yml"):  # put back after the test, with what else install() sets
        monkeypatch.setitem(serialize.LOADERS, suffix, serialize.LOADERS[suffix])
    monkeypatch.setattr(strictyaml, "parse_yaml", strictyaml.parse_yaml)
    monkeypatch.setattr(strictyaml, "validate", strictyaml.validate)
    monkeypatch.setattr(dvcfile, "modify_yaml", dvcfile.modify_yaml)
    with lockfile.reading():
        lockfile.install()  # installed inside a plan: stays
    assert isinstance(param.dpath, params_lookup.DpathProxy)
    lockfile.install()  # not wrapped twice
    assert param.dpath._module is dpath and param.dpath.search is dpath.search
    assert param.read_param_file(LocalFileSystem(), str(path), keys, flatten=True) == before
    assert param.read_param_file(LocalFileSystem(), str(path), ["rl", "runs.s0"], flatten=False) == {
        "rl": {"lr": 3e-06, "arms": ["a", "b"]}, "runs": {"s0": {"seed": 0}}}  # dpath.search, through the proxy
    monkeypatch.setattr(dpath.segments, "fold", _no_walk)  # the plain keys found without dpath's walk
    assert param.read_param_file(LocalFileSystem(), str(path), keys[:2], flatten=True) == {
        "method": "grpo", "rl.lr": 3e-06}


def test_the_proxy_checks_each_parse_once_and_a_new_parse_again():
    import dpath

    proxy = params_lookup.DpathProxy(dpath, installed=False)
    plain = {"a": 1, "b": {"c": 2}}
    assert proxy.get(plain, "a", separator=".") == 1 and proxy.get(plain, "b.c", separator=".") == 2
    odd = {"a": 1, "b": {"": 2}}  # the next parse: one dpath refuses, whatever the last answer was
    assert _outcome(proxy.get, odd, "a", separator=".") == _outcome(dpath.get, odd, "a", separator=".")
