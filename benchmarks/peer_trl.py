"""reasonrl against TRL's GRPOTrainer on the same GRPO job, side by side in one run, on CPU, offline.

    pip install -e '.[bench]'      (or the `bench` extra's pinned packages, from pyproject.toml)
    python benchmarks/peer_trl.py [--steps 4] [--defaults-steps 2]

The job, for both: B = 32 prompts of hop world (n in [4, 16], k <= 7: the `rl:` defaults) x G = 8 completions,
temperature 1, at most 12 new tokens (reasonrl: the batch's largest k + 5), true (verifiable) reward,
group-normalised advantages, token-mean loss, no KL (beta 0), one optimizer step (AdamW, lr 1e-3, constant, grad clip 1)
per 32 x 8 completions, one pass over them (mu = 1), one thread, fp32. Both models start untrained (so
about two thirds of the completions run to the token budget, on both sides alike) and have the same size:
reasonrl's TinyReasoner (the model defaults: d 128, 4 heads, 3 layers, GELU MLP 4x, tied head) and a
GPT-2 of the same shape in transformers. TRL gets a character tokenizer built here (no download; PAD = id
0, `$` = end of sequence, so generation stops there); TRL decodes completions without special tokens, so the reward
reads the `$` from the completion ids.

At beta 0 TRL loads no reference model, while the pipeline's step still scores 8 groups under the reference for
its `losses/kl` record. So reasonrl runs two contenders: the pipeline's step, and the step without a reference
(`Context(ref=None)`: no reference forward and no record; its updates are the same bits, tests/test_loop.py), the
job as TRL runs it. The 5x target reads the second; the first's ratio is printed beside it. The two alternate
which goes first from step to step.

TRL is configured as a careful CPU user would: fp32, no gradient checkpointing, no vLLM, dropout off,
per_device_train_batch_size = 256 with no accumulation (one optimizer step per generation batch).
Its defaults (bf16 and gradient checkpointing) are run for --defaults-steps steps too and reported
separately, labelled. Both run on the allocator `reasonrl repro` gives its stages (reasonrl.runner.malloc): tcmalloc
where it is installed, which speeds TRL up too; REASONRL_MALLOC=system runs both on glibc's malloc, and then
reasonrl without the heap trims of its memory policy (the computation alone) is timed too, labelled.
Step k of each reasonrl contender runs right before step k of TRL (inside TRL's step callback, outside TRL's
timing), so a drift of the machine's speed falls on all; seconds per step are the mean over the steps after the first
(warm-up), and the range of the per-step ratios is printed beside their ratio. After the timed steps one more
step of each runs untimed under the dispatch mode of benchmarks/roofline.py: each contender's matrix-product FLOPs
per step (2 M K N per product) and achieved GFLOP/s, so the time ratio reads as TRL's work over reasonrl's times
TRL's time per FLOP over reasonrl's.

The packages go into an environment that keeps the project's torch, the CPU wheel the README's Quick start
installs: `pip install torch==2.13.0 trl==1.16.0 ...` (the `bench` extra keeps it too); without the pin, pip
resolves transformers' torch requirement to the newest release, a CUDA build, and both contenders would run on it.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import tempfile
import time
import warnings
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: model and tokenizer are built here
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from reasonrl.runner import malloc  # noqa: E402

if __name__ == "__main__":  # not when benchmarks/malloc.py imports peer_context
    malloc.restart()  # the allocator `reasonrl repro` gives its stages, for both contenders (before torch loads)

import torch  # noqa: E402
from roofline import MatmulShapes, shape_flops  # noqa: E402  (benchmarks/, this script's directory)

from reasonrl import numerics  # noqa: E402
from reasonrl.model import ModelConfig, TinyReasoner  # noqa: E402
from reasonrl.rl import algorithm as A  # noqa: E402
from reasonrl.rl.algorithm import rl_step  # noqa: E402
from reasonrl.rl.context import Context, Hooks  # noqa: E402
from reasonrl.rl.job import make_job  # noqa: E402
from reasonrl.rl.memory import memory_hooks  # noqa: E402
from reasonrl.tasks import END, END_ID, PAD_ID, decode, get_task, vocab_size  # noqa: E402
from reasonrl.tasks.base import ITOS  # noqa: E402
from reasonrl.tasks.hop import Problem  # noqa: E402

B, G, MAX_NEW, LR = 32, 8, 12, 1e-3


# ----------------------------------------------------------------------------- reasonrl


def peer_context(steps: int, trim: bool = True, reference: bool = True) -> tuple[Context, torch.optim.Optimizer]:
    """reasonrl's side of the job: a context and optimizer for `steps` steps of `rl_step`, the pipeline's step,
    with the memory policy's heap trims (the ones that bound a stage's peak RSS); trim=False turns them off:
    the computation alone, at the price of a resident set that grows over a run under glibc. reference=False
    runs without a reference model, as TRL does at beta 0: the same updates, without the pipeline's `losses/kl`
    record (its reference forward over 8 groups)."""
    job = make_job({}, {"steps": steps, "B": B, "G": G, "lr": LR, "beta": 0.0, "temperature": 1.0})
    policy = TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval()
    ref = copy.deepcopy(policy).requires_grad_(False) if reference else None
    ctx = Context(job=job, policy=policy, ref=ref, verifier=None,
                  rng=random.Random(0), sample_gen=torch.Generator().manual_seed(0),
                  reward_gen=torch.Generator().manual_seed(1), hooks=memory_hooks(job, False) if trim else Hooks())
    return ctx, torch.optim.AdamW(ctx.policy.parameters(), lr=job.lr, weight_decay=0.0)


class ReasonrlSteps:
    """reasonrl's side, one `rl_step` per call (peer_context), for `steps` calls: timed, or counted after the
    first `timed` (StepTimer)."""

    def __init__(self, steps: int, trim: bool = True, timed: int | None = None, reference: bool = True):
        self.ctx, self.opt = peer_context(steps, trim, reference)
        self.timer = StepTimer(timed=timed)
        self.seconds, self.cpu = self.timer.seconds, self.timer.cpu  # the timer's lists, filled by each call

    def __call__(self) -> None:
        self.timer.begin()
        try:
            rl_step(self.ctx, self.opt, len(self.seconds) + self.timer.counted)
        finally:
            self.timer.end()


def reasonrl_seconds(steps: int, trim: bool = True) -> tuple[list[float], list[float]]:
    """Seconds and CPU seconds of each of `steps` steps of `rl_step` (peer_context), one after the other."""
    ours = ReasonrlSteps(steps, trim)
    for _ in range(steps):
        ours()
    return ours.seconds, ours.cpu


# ----------------------------------------------------------------------------- TRL


def char_tokenizer():
    """A character-level fast tokenizer with reasonrl's ids: PAD 0, letters, digits, `> , ? = | $`."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    # hop's ids only: the alphabet holds all of printable ASCII, and a wider head would cost TRL's model FLOPs ours
    # does not spend
    vocab = {"<pad>": PAD_ID, **{c: i for i, c in ITOS.items() if i < vocab_size(get_task("hop"))}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token=END, padding_side="left")


def gpt2_like(vocab_size: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = ModelConfig()
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(
        vocab_size=vocab_size, n_positions=cfg.max_len, n_embd=cfg.d_model, n_layer=cfg.n_layers,
        n_head=cfg.n_heads, n_inner=4 * cfg.d_model, activation_function="gelu", resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=END_ID, eos_token_id=END_ID, pad_token_id=PAD_ID,
        tie_word_embeddings=True))


def problems_dataset(count: int):
    from datasets import Dataset

    rng = random.Random(0)
    probs = A.draw_problems(rng, make_job({}, {}), count)
    return Dataset.from_dict({"prompt": [p.prompt for p in probs],
                              "problem": [json.dumps(p.to_dict()) for p in probs]})


def true_reward(prompts, completions, completion_ids, problem, **_):
    """1 for a correct response. The text TRL passes has `$` stripped (a special token), so decode the ids."""
    return [float(Problem.from_dict(json.loads(p)).is_correct(decode(ids)))
            for p, ids in zip(problem, completion_ids)]


class StepTimer:
    """Times each step; `before` (optional) runs ahead of each one, outside its time. The steps after the first
    `timed` (all when None) are not timed but counted: the matrix products they run, by shape (`counter`,
    roofline.MatmulShapes), so that the counter's overhead never enters a timed step."""

    def __init__(self, before: Callable[[], object] | None = None, timed: int | None = None):
        self.seconds: list[float] = []
        self.cpu: list[float] = []
        self.setup: dict = {}
        self.before, self.timed = before, timed
        self.counter = MatmulShapes()
        self.counted = 0  # steps run under the counter
        self._t0 = self._c0 = 0.0
        self._counting = False

    def callback(self):
        from transformers import TrainerCallback

        timer = self

        class _CB(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                timer.begin()

            def on_step_end(self, args, state, control, **kw):
                timer.end()

        return _CB()

    def begin(self) -> None:
        if self.before is not None:
            self.before()
        self._counting = self.timed is not None and len(self.seconds) >= self.timed
        if self._counting:
            self.counter.__enter__()
        else:
            self._t0, self._c0 = time.perf_counter(), time.process_time()

    def end(self) -> None:
        if self._counting:
            self.stop()
            self.counted += 1
            return
        self.seconds.append(time.perf_counter() - self._t0)
        self.cpu.append(time.process_time() - self._c0)

    def stop(self) -> None:
        """Leave the counter if a counted step is under way: end() does, and trl_steps after a step that raised."""
        if self._counting:
            self._counting = False
            self.counter.__exit__(None, None, None)

    def flops_per_step(self) -> float:
        """The counted steps' matrix-product FLOPs (2 M K N each), per step; nan when none was counted."""
        return shape_flops(self.counter.shapes) / self.counted if self.counted else float("nan")


def trl_steps(steps: int, careful: bool, before: Callable[[], object] | None = None, count: bool = False
              ) -> StepTimer:
    """`steps` timed TRL steps, then one counted when `count`: the StepTimer holds each step's seconds and CPU
    seconds, the counted step's matrix products and TRL's precision setup. `before()` runs ahead of each step,
    outside its time (main interleaves reasonrl's steps this way)."""
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    hf_logging.set_verbosity_error()
    tok = char_tokenizer()
    model = gpt2_like(len(tok))
    precision = dict(bf16=False, gradient_checkpointing=False) if careful else {}  # else TRL's defaults
    with tempfile.TemporaryDirectory() as tmp:
        args = GRPOConfig(
            output_dir=tmp, use_cpu=True, seed=0, max_steps=steps + count, learning_rate=LR,
            lr_scheduler_type="constant", weight_decay=0.0, max_grad_norm=1.0, per_device_train_batch_size=B * G,
            gradient_accumulation_steps=1, num_generations=G, max_completion_length=MAX_NEW, temperature=1.0,
            top_k=0, top_p=1.0, beta=0.0,
            num_iterations=1, epsilon=0.2, loss_type="dapo", scale_rewards="group", disable_dropout=True,
            generation_kwargs={"suppress_tokens": [PAD_ID]},  # PAD is never an action, as in reasonrl
            logging_steps=1, save_strategy="no", report_to=[], disable_tqdm=True, dataloader_num_workers=0,
            **precision)
        timer = StepTimer(before, timed=steps)
        trainer = GRPOTrainer(model=model, reward_funcs=true_reward, args=args,
                              train_dataset=problems_dataset(B * (steps + 2)), processing_class=tok,
                              callbacks=[timer.callback()])
        try:
            trainer.train()
        finally:
            timer.stop()  # a step that raised leaves no counter entered
        m = trainer.model
        timer.setup = {"bf16": bool(args.bf16), "params_dtype": str(next(m.parameters()).dtype),
                       "gradient_checkpointing": bool(getattr(m, "is_gradient_checkpointing", False))}
    return timer


def torch_mismatch(version: str, cuda: str | None, requires: list[str] | None) -> str | None:
    """Why torch `version` (built for CUDA `cuda`, None for a CPU build) is not the project's torch, given the
    project's requirement strings (`importlib.metadata.requires`); None when it is, or when nothing pins it."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    pins = [r for r in map(Requirement, requires or []) if r.name.lower() == "torch"]
    if pins and not pins[0].specifier.contains(Version(version).base_version, prereleases=True):
        return f"torch {version} is not the project's torch{pins[0].specifier}"
    if cuda is not None:
        return f"torch {version} is a CUDA {cuda} build, not the CPU wheel the project installs"
    return None


def project_requires() -> list[str] | None:
    """The installed project's requirement strings, None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.requires("reasonrl")
    except metadata.PackageNotFoundError:
        return None


# reasonrl's contenders: the pipeline's step (with its `losses/kl` record, whose reference forward TRL does not run
# at beta 0), and the step without a reference, the job as TRL runs it, which the 5x target reads
CONTENDERS = {"reasonrl": True, "reasonrl_noref": False}  # key prefix -> reference


def interleaved(steps: int, trl: Callable[..., StepTimer]) -> dict:
    """Run `trl(steps, careful=True, before=..., count=True)` with reasonrl's step k of each contender
    (CONTENDERS) right before TRL's step k, the two in turn first (the one that runs second may find the caches
    warm from the first's near-identical step): `steps` timed steps each, then one counted each (step steps + 1,
    after all timing). Every contender's seconds and CPU seconds per step, its matrix-product FLOPs per step, and
    TRL's setup."""
    ours = [ReasonrlSteps(steps + 1, timed=steps, reference=ref) for ref in CONTENDERS.values()]
    k = 0

    def before():
        nonlocal k
        for step in ours if k % 2 == 0 else ours[::-1]:
            step()
        k += 1

    theirs = trl(steps, careful=True, before=before, count=True)
    runs = {"trl_fp32_steps": theirs.seconds, "trl_fp32_cpu_steps": theirs.cpu, "trl_fp32_setup": theirs.setup,
            "trl_fp32_flops_per_step": theirs.flops_per_step()}
    for key, step in zip(CONTENDERS, ours):
        if (len(step.seconds), step.timer.counted) != (len(theirs.seconds), theirs.counted):
            raise RuntimeError(f"interleaving: {len(step.seconds)} + {step.timer.counted} {key} steps (timed + "
                               f"counted) against {len(theirs.seconds)} + {theirs.counted} TRL steps")
        runs |= {f"{key}_steps": step.seconds, f"{key}_cpu_steps": step.cpu,
                 f"{key}_flops_per_step": step.timer.flops_per_step()}
    return runs


def summary(runs: dict) -> dict:
    """Means over the steps after the first (warm-up); for each reasonrl contender (CONTENDERS) the ratios TRL /
    it (`ratio` for the pipeline's step, `ratio_noref` for the step without a reference), each step pair's ratio,
    and the time ratio split into the work ratio and the ratio of time per FLOP."""
    trl = runs["trl_fp32_steps"]
    res = {"trl_fp32_s_per_step": mean_after_first(trl),
           "trl_fp32_cpu_s_per_step": mean_after_first(runs["trl_fp32_cpu_steps"])}
    res["trl_fp32_gflop_s"] = runs["trl_fp32_flops_per_step"] / res["trl_fp32_s_per_step"] / 1e9
    for key in CONTENDERS:
        tail = key.removeprefix("reasonrl")  # "" or "_noref"
        ours = runs[f"{key}_steps"]
        res[f"{key}_s_per_step"] = mean_after_first(ours)
        res[f"{key}_cpu_s_per_step"] = mean_after_first(runs[f"{key}_cpu_steps"])
        res[f"ratio{tail}"] = res["trl_fp32_s_per_step"] / res[f"{key}_s_per_step"]
        res[f"ratio{tail}_cpu"] = res["trl_fp32_cpu_s_per_step"] / res[f"{key}_cpu_s_per_step"]
        res[f"pair_ratios{tail}"] = [t / o for t, o in zip(trl[1:], ours[1:])] or [res[f"ratio{tail}"]]
        # the time ratio as (how much more work TRL does) x (how much longer TRL takes per unit of that work)
        res[f"flops_ratio{tail}"] = runs["trl_fp32_flops_per_step"] / runs[f"{key}_flops_per_step"]
        res[f"per_flop_ratio{tail}"] = res[f"ratio{tail}"] / res[f"flops_ratio{tail}"]
        res[f"{key}_gflop_s"] = runs[f"{key}_flops_per_step"] / res[f"{key}_s_per_step"] / 1e9
    return res


def mean_after_first(xs: list[float]) -> float:
    xs = xs[1:] if len(xs) > 1 else xs
    return sum(xs) / len(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4, help="steps per contender (the first is warm-up)")
    ap.add_argument("--defaults-steps", type=int, default=2, help="steps of TRL with its defaults (0 = skip)")
    ap.add_argument("--json", help="also write the numbers to this file")
    numerics.add_argument(ap)
    args = ap.parse_args()
    numerics.pin(args.numerics)
    torch.set_num_threads(1)
    if why := torch_mismatch(torch.__version__, torch.version.cuda, project_requires()):
        print(f"warning: {why}: the numbers are for this build")
    warnings.filterwarnings("ignore")
    # step k of reasonrl runs right before step k of TRL: the machine's speed drifts over minutes (a fixed matmul's
    # time ranged over 4.0-6.1 ms in one 40 s loop), and contenders run one after the other meet different machines
    runs = interleaved(args.steps, trl_steps)
    setup = runs["trl_fp32_setup"]
    res = {**summary(runs), **runs}
    trims = malloc.active() == "system"  # under tcmalloc the memory policy trims nothing
    untrimmed, untrimmed_cpu = reasonrl_seconds(args.steps, trim=False) if trims else ([], [])
    res["malloc"] = malloc.active()
    if trims:
        res["reasonrl_untrimmed_s_per_step"] = mean_after_first(untrimmed)
        res["reasonrl_untrimmed_cpu_s_per_step"] = mean_after_first(untrimmed_cpu)
        res["reasonrl_untrimmed_steps"] = untrimmed
    if args.defaults_steps:
        d = trl_steps(args.defaults_steps, careful=False)
        res["trl_defaults_s_per_step"], res["trl_defaults_steps"] = mean_after_first(d.seconds), d.seconds
        res["trl_defaults_cpu_s_per_step"] = mean_after_first(d.cpu)
        res["trl_defaults_setup"] = d.setup
    import transformers
    import trl as trl_pkg

    print(f"GRPO, B = {B} prompts x G = {G} completions, <= {MAX_NEW} new tokens, temperature 1, fp32, 1 thread,"
          f" untrained equal-size {ModelConfig().n_layers}-layer decoders; torch {torch.__version__},"
          f" trl {trl_pkg.__version__}, transformers {transformers.__version__}; malloc {res['malloc']} for both")
    print(f"  machine: {numerics.machine()}; numerics {args.numerics}")
    print(f"  {'':46s}{'s/step':>8s}{'CPU s/step':>12s}{'GFLOP/step':>12s}{'GFLOP/s':>9s}")
    for key, label in (("reasonrl", "reasonrl, the pipeline's step (its KL record)"),
                       ("reasonrl_noref", "reasonrl without reference (TRL's job)"), ("trl_fp32", None)):
        label = label or "TRL GRPOTrainer, fp32, no grad checkpointing"
        print(f"  {label:46s}{res[f'{key}_s_per_step']:8.3f}{res[f'{key}_cpu_s_per_step']:12.3f}"
              f"{res[f'{key}_flops_per_step'] / 1e9:12.3f}{res[f'{key}_gflop_s']:9.2f}"
              + (f"   {setup}" if key == "trl_fp32" else ""))
    for tail, label in (("_noref", "ratio TRL / reasonrl w/o ref (target >= 5x)"),
                        ("", "ratio TRL / the pipeline's step")):
        print(f"  {label:46s}{res[f'ratio{tail}']:7.1f}x{res[f'ratio{tail}_cpu']:11.1f}x"
              f"   step pairs {min(res[f'pair_ratios{tail}']):.1f}x to {max(res[f'pair_ratios{tail}']):.1f}x;"
              f" TRL does {res[f'flops_ratio{tail}']:.1f}x the work and takes {res[f'per_flop_ratio{tail}']:.2f}x"
              " as long per FLOP")
    if trims:
        print(f"  {'reasonrl without heap trims (labelled; after)':46s}{res['reasonrl_untrimmed_s_per_step']:8.3f}"
              f"{res['reasonrl_untrimmed_cpu_s_per_step']:12.3f}   "
              f"{res['trl_fp32_s_per_step'] / res['reasonrl_untrimmed_s_per_step']:.1f}x")
    if args.defaults_steps:
        print(f"  {'TRL with its defaults (labelled: bf16 + GC)':46s}{res['trl_defaults_s_per_step']:8.3f}"
              f"{res['trl_defaults_cpu_s_per_step']:12.3f}   {res['trl_defaults_setup']}")
    print(f"  (mean over steps 2..{args.steps}, first step warm-up; reasonrl's step k of each kind ran right before"
          " TRL's step k, the two kinds in turn first"
          + ("; the untrimmed steps ran after TRL's, not interleaved" if trims else "")
          + f"; FLOPs: step {args.steps + 1} of each, untimed)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
