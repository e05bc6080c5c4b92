"""DVC's lookup of a stage's params, faster. DVC looks each key up in its parse of params.yaml with
`dpath.get`, which walks the whole file and matches every path it meets against the key as a glob, for each key
(about 5 a stage), several times a stage, and 439 stages in each planner pass (docs/performance.md,
"Measurements the code cites").
`param_get` answers a plain key (no glob characters, string keys along its path) by indexing, which finds the
one node dpath's walk would; anything else goes to dpath itself. What it still pays is one check of the whole
file per parse (`is_walkable`: that dpath's walk would raise nothing), a plain loop, far cheaper than dpath's
matching.

`patch` puts it in DVC's params reader (lockfile's `install` for good, its `reading` for a planner pass);
tests/test_params_lookup.py compares it with dpath, errors included.
"""

from __future__ import annotations

from typing import Any

from . import dvc_adapter

_GLOB = frozenset("*?[")  # fnmatch's special characters: a key holding one is a pattern, left to dpath
_MISSING = object()
DEPTH = 100  # levels of a params file walked by `param_get`; deeper ones go to dpath (none is near it)


def _empty(key: Any) -> bool:
    try:
        return len(key) == 0
    except TypeError:  # a number, None
        return False


def is_walkable(node: Any) -> bool:
    """Whether dpath's walk over `node` meets only what `param_get` can mirror: no key of length 0 (dpath
    refuses those unless an option allows them), every value a dict, a list or one of dpath's leaves (it walks
    anything else in its own way), and no more than DEPTH levels (dpath's walk recurses: a very deep file or
    a YAML alias that contains itself ends in its RecursionError)."""
    from dpath.segments import leaf

    stack = [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > DEPTH:
            return False
        if isinstance(item, dict):
            if any(_empty(k) for k in item):
                return False
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        elif not leaf(item):  # a date, a tuple
            return False
    return True


def param_get(obj: Any, glob: Any, separator: str = "/", default: Any = _MISSING, walkable: bool | None = None) -> Any:
    """`dpath.get(obj, glob, separator, default)`, by indexing where the key is plain and found: the node
    dpath's walk would match (at that depth, each segment equal to a key), and the only one, as keys are
    unique. dpath matches a key `k` to a segment `g` when `k == g` for a string, `k == int(g)` for an integer (a
    bool too), never for another type (a float key in params.yaml is one: a map from lr to a name). Lists,
    patterns, integer keys on the path, missing keys and odd files go to dpath, with its errors. `walkable`:
    `is_walkable(obj)`, where the caller already knows it."""
    import dpath

    if isinstance(glob, str) and glob not in ("", "/"):  # dpath answers both with the whole object
        segments = glob.lstrip(separator).split(separator)
        if all(_GLOB.isdisjoint(s) for s in segments) and (is_walkable(obj) if walkable is None else walkable):
            node = obj
            for s in segments:
                if not isinstance(node, dict) or s not in node or any(isinstance(k, int) for k in node):
                    break
                node = node[s]
            else:
                return node
    return dpath.get(obj, glob, separator=separator, **({} if default is _MISSING else {"default": default}))


class DpathProxy:
    """The `dpath` module as dvc.dependency.param sees it: `get` is `param_get`, the rest dpath's own. DVC's
    reader looks all of a stage's keys up in one fresh parse of the file (`read_param_file`, which edits
    nothing between them), so the whole-file check runs once per parse, not once per key."""

    def __init__(self, module: Any, installed: bool) -> None:
        self._module, self.installed = module, installed
        self._last: tuple[Any, bool] | None = None  # (the parse last checked, held so its id is not reused; answer)

    def get(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        last = self._last
        if last is None or last[0] is not obj:
            self._last = last = (obj, is_walkable(obj))
        return param_get(obj, *args, walkable=last[1], **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def patch(installed: bool = False) -> DpathProxy | None:
    """DVC's params reader (`read_param_file`) looks keys up through `param_get`: the proxy put in place, or
    None where one was there already (kept for good from now on if `installed`)."""
    current = dvc_adapter.PARAMS_DPATH.get()
    if isinstance(current, DpathProxy):
        current.installed |= installed
        return None
    proxy = DpathProxy(current, installed)
    dvc_adapter.PARAMS_DPATH.set(proxy)
    return proxy


def unpatch(proxy: DpathProxy | None) -> None:
    """Put dpath back where `proxy` is still in place and no `install` has claimed it."""
    if proxy is not None and dvc_adapter.PARAMS_DPATH.get() is proxy and not proxy.installed:
        dvc_adapter.PARAMS_DPATH.set(proxy._module)
