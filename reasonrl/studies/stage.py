"""The entry of every report stage: its config from params (with studies.equivalence), then the report.
Apart from the studies' shared pieces (paths, runs, answers, markdown, manifest), so that those carry no
stage plumbing."""

from __future__ import annotations

import sys
from dataclasses import fields, replace
from pathlib import Path

from .. import stats
from ..config import check, from_dict, load_params, node_at
from ..errors import install_excepthook
from .paths import checkpoint_tasks

EQUIVALENCE_KEY = "studies.equivalence"


def equivalence_of(params: dict) -> float:
    """params studies.equivalence: the half-width of the region of practical equivalence (default 0.01)."""
    value = (params.get("studies") or {}).get("equivalence", stats.EQUIVALENCE)
    check(isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1, EQUIVALENCE_KEY,
          f"{value!r} is not a number in [0, 1)")
    return float(value)


def load_config(module, params: dict):
    """The study's config: `module.load_config(params)` when it has one, else its SECTION; a config with
    an `equivalence` field takes params studies.equivalence, one with a `tasks` field the task of every base
    and run in params (the folders their outputs sit in: paths.checkpoint_tasks)."""
    if hasattr(module, "load_config"):
        cfg = module.load_config(params)
    else:
        cfg = from_dict(module.Config, node_at(params, module.SECTION), module.SECTION)
    if hasattr(cfg, "equivalence"):
        cfg.equivalence = equivalence_of(params)
    if "tasks" in {f.name for f in fields(cfg)}:  # passk's tasks() is its models' tasks, not this map
        cfg.tasks = checkpoint_tasks(params)
    return cfg


def run_report(module, params_path: str | Path = "params.yaml", root: str | Path = ".", **settings) -> None:
    """Stage entry of report_<study>: load the study's config, set the config fields `settings` names (those
    a stage takes from its arguments, not from params) and write its report under root. A bad param or a
    missing input is one `error:` line, as in every other stage."""
    install_excepthook()
    cfg = load_config(module, load_params(params_path))
    if settings:
        cfg = replace(cfg, **settings)
    module.report(cfg, Path(root))
    print(f"{module.__name__.rsplit('.', 1)[-1]}: {len(module.outputs(cfg))} outputs written", file=sys.stderr)
