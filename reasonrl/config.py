"""Strict loading of params sections into dataclasses.

Every stage reads its section of params.yaml through `from_dict`, so a typo or a value of the
wrong type fails before any work starts, naming the offending key (nanoGPT's configurator and
cleanrl's `Args` are the models).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import yaml

from .errors import ConfigError, suggest, unknown_key_fix

__all__ = ["ConfigError", "check", "from_dict", "load_params", "to_dict"]

T = TypeVar("T")


def check(ok: bool, key: str, message: str, fix: str | None = None) -> None:
    """Raise ConfigError for `key` unless `ok`; used by dataclass __post_init__ validators."""
    if not ok:
        raise ConfigError(key, message, fix)


def node_at(params: dict, dotted: str):
    """params[a][b]... for the dotted path "a.b..."; a missing part is a ConfigError naming the path so far
    and suggesting the nearest defined key."""
    node, done = params, []
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            valid = [str(k) for k in node] if isinstance(node, dict) else []
            near = suggest(part, valid)
            fix = (f"did you mean {near!r}? " if near else "") + f"defined: {', '.join(valid) or 'nothing'}"
            raise ConfigError(".".join([*done, part]), "not defined in params.yaml", fix)
        node = node[part]
        done.append(part)
    return node


def load_params(path: str | Path = "params.yaml") -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(str(path), "params file not found", "run from the project root or pass its path")
    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(str(path), f"not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), "expected a mapping at the top level")
    return data


def _coerce(value: Any, tp: Any, key: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option, key)
            except ConfigError as e:
                errors.append(e)
        raise (errors[0] if len(errors) == 1 else ConfigError(key, f"{value!r} matches none of {tp}"))
    if origin is Literal:
        allowed = get_args(tp)
        check(value in allowed, key, f"{value!r} is not one of {list(allowed)}")
        return value
    if dataclasses.is_dataclass(tp):
        check(isinstance(value, dict), key, f"expected a mapping, got {value!r}")
        return from_dict(tp, value, key)
    if origin in (list, tuple):
        check(isinstance(value, (list, tuple)), key, f"expected a list, got {value!r}")
        args = get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            check(len(value) == len(args), key, f"expected {len(args)} items, got {len(value)}")
            items = [_coerce(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args))]
        else:
            inner = args[0] if args else Any
            items = [_coerce(v, inner, f"{key}[{i}]") for i, v in enumerate(value)]
        return origin(items)
    if origin is dict:
        check(isinstance(value, dict), key, f"expected a mapping, got {value!r}")
        _, vt = get_args(tp) or (Any, Any)
        return {k: _coerce(v, vt, f"{key}.{k}") for k, v in value.items()}
    if tp is bool:
        check(isinstance(value, bool), key, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        check(isinstance(value, int) and not isinstance(value, bool), key, f"expected an integer, got {value!r}")
        return value
    if tp is float:
        # YAML reads 1e-3 as a string unless written 1.0e-3; accept both spellings.
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(key, f"expected a number, got {value!r}") from None
        check(isinstance(value, (int, float)) and not isinstance(value, bool), key,
              f"expected a number, got {value!r}")
        return float(value)
    if tp is str:
        check(isinstance(value, str), key, f"expected a string, got {value!r}")
        return value
    raise TypeError(f"{key}: unsupported field type {tp}")


def from_dict(cls: type[T], data: dict | None, where: str) -> T:
    """Build dataclass `cls` from `data`; unknown keys, wrong types and bad values raise ConfigError.

    `where` is the dotted params path of `data` (e.g. "bases.cot"); it prefixes every message.
    """
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(where, f"expected a mapping, got {data!r}")
    names = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in names:
            raise ConfigError(f"{where}.{key}", "unknown key", unknown_key_fix(str(key), names))
    hints = typing.get_type_hints(cls)
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}") for k, v in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError as e:
        raise e.within(where) from None


def to_dict(obj: Any) -> dict:
    """A JSON-able dict of a (possibly nested) config dataclass."""
    return dataclasses.asdict(obj)
