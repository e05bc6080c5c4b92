"""params.yaml writes each base's training block once: a base seed is its family's block with its own seed
(a YAML merge, `<<: *block`), never a copy of it."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BASE_GROUPS = (("bases",), ("mixed", "phase1"), ("mixed", "phase2"))


def _get(node: yaml.MappingNode, key: str):
    return next((v for k, v in node.value if k.value == key), None)


def written_trains(text: str) -> dict[str, tuple[dict, bool]]:
    """{base: (its resolved train block, whether params.yaml writes that block out in full)}: a block written in
    full has no merge key and is no alias of a block met before."""
    root, resolved = yaml.compose(text), yaml.safe_load(text)
    seen, out = set(), {}
    for path in BASE_GROUPS:
        node, values = root, resolved
        for part in path:
            node, values = _get(node, part), values[part]
        for key, entry in node.value:
            train = _get(entry, "train")
            if train is None:  # an entry merged whole from another (`<<: *block`) inherits that one's block
                continue
            full = id(train) not in seen and not any(k.value == "<<" for k, _ in train.value)
            seen.add(id(train))
            out[key.value] = (values[key.value]["train"], full)
    return out


def copies(text: str) -> list[tuple[str, str]]:
    """Pairs of bases whose training blocks are both written in full and differ in nothing but the seed."""
    trains = written_trains(text)
    full = [(name, {k: v for k, v in t.items() if k != "seed"}) for name, (t, whole) in trains.items() if whole]
    return [(a, b) for i, (a, ta) in enumerate(full) for b, tb in full[i + 1:] if ta == tb]


def test_no_base_seed_copies_its_familys_training_block():
    text = (ROOT / "params.yaml").read_text()
    assert copies(text) == []
    trains = written_trains(text)
    assert sum(whole for _, whole in trains.values()) <= 6 < len(trains)  # cot, hop's, exp's, chain's, phase 2's


def test_a_copied_block_is_found():
    text = (ROOT / "params.yaml").read_text()
    block = yaml.safe_load(text)["bases"]["cot_s3"]["train"]
    copied = text.replace("  cot_s3: {<<: *hop_base, train: {<<: *hop_train, seed: 3}}",
                          "  cot_s3: {<<: *hop_base, train: " + yaml.safe_dump(block, default_flow_style=True).strip()
                          + "}")
    assert copied != text and yaml.safe_load(copied) == yaml.safe_load(text)
    assert copies(copied) == [("cot_s2", "cot_s3")]
