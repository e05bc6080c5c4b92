"""Checkpoint files: one file holding a model's state dict and a JSON-able `meta` dict (model config, the
params that produced it, a training summary). They load with `torch.load(weights_only=True)`, so a
checkpoint can never execute code.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict
from pathlib import Path

import torch

from . import numerics
from .errors import CheckpointError, rebuild_fix
from .io import atomic_path
from .model import ModelConfig, TinyReasoner

FORMAT = "reasonrl-checkpoint-v1"


def save_checkpoint(path: str | Path, model: TinyReasoner, meta: dict) -> None:
    """Write the model's weights, config and `meta` (JSON-able) to `path` atomically. The intra-op
    thread count it was computed with is stored beside them: it is part of what the numbers are."""
    blob = {"format": FORMAT, "model_config": json.dumps(asdict(model.cfg)), "meta": json.dumps(meta),
            "threads": torch.get_num_threads(),
            "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()}}
    save_blob(path, blob)


def save_blob(path: str | Path, blob: dict) -> None:
    """torch.save `blob` to `path` atomically; the same blob gives the same bytes whatever the path. The
    `numerics` setting the weights were computed under is stored beside them, like the thread count."""
    blob = {**blob, "numerics": numerics.current()}
    # through a file object: given a path, torch names the archive's records after the (random) temporary
    # file's name, and a checkpoint's bytes would differ on every save
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        torch.save(blob, f)


def torch_load_reason(e: BaseException) -> str:
    """The informative line of torch.load's error: the refused global of a pickle that references
    code, else the first sentence (torch appends long migration notes and links)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    refused = [line for line in lines if "global" in line.lower() and ("unsupported" in line.lower()
                                                                       or "blocked" in line.lower())]
    if refused:
        return "it references code, which weights_only loading refuses: " + refused[0].split(". ")[0].rstrip(".")
    if isinstance(e, KeyError) or not lines:
        return f"not a torch.save file ({type(e).__name__})"
    return lines[0].split(". ")[0].rstrip(".")


def load_blob(path: str | Path, fmt: str = FORMAT) -> dict:
    """Safely load a checkpoint dict of format `fmt`; any problem is one CheckpointError naming the
    path, what torch said, and the stage that makes the file."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(path.as_posix(), "checkpoint not found", rebuild_fix(path))
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for truncated or foreign files
        reason = torch_load_reason(e)
        if not zipfile.is_zipfile(path):  # torch.save writes a zip whose directory is at the end
            reason = f"truncated or damaged, no zip directory at its end (torch: {reason})"
        raise CheckpointError(path.as_posix(), f"not a readable checkpoint: {reason}", rebuild_fix(path)) from None
    if not isinstance(blob, dict) or blob.get("format") != fmt:
        found = blob.get("format") if isinstance(blob, dict) else None
        raise CheckpointError(path.as_posix(), f"not a {fmt} file" + (f" (it is {found})" if found else ""),
                              rebuild_fix(path))
    return blob


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[TinyReasoner, dict]:
    """(model in eval mode on `device`, meta) from a file written by save_checkpoint."""
    blob = load_blob(path)
    model = TinyReasoner(ModelConfig(**json.loads(blob["model_config"])))
    try:
        model.load_state_dict(blob["state_dict"])
    except RuntimeError as e:
        raise CheckpointError(Path(path).as_posix(), "weights do not match the stored config "
                              f"({str(e).splitlines()[0]})", rebuild_fix(path)) from None
    return model.to(device).eval(), json.loads(blob["meta"])
