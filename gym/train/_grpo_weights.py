"""The weights being trained, in this process: their policies, their updates, checkpoints.

`LocalWeights` holds a local model (tiny or a transformers folder), its optimizer and
its version (the number of updates applied). Its policies (`policy_factory`) share the
model object, so once `update` has changed the weights in place and bumped the version,
the next episode samples from the new weights: the weight sync of the in-process
backend is the model being the same object. With a sampling server
(``--policy openai``) the trainer holds the weights here and `gym.train._sync` sends
each version to the server; with ``--sync lora`` only a LoRA adapter injected into the
model (`LocalWeights.create(..., lora=...)`) is trained.

A checkpoint is a folder: the model as a Hugging Face folder (``TinyPolicy(model=...)``
or ``LocalPolicy(model=...)`` loads it), ``trainer.pt`` (model and optimizer state, to
resume) and ``checkpoint.json`` (`CheckpointInfo`: the tasks and episodes it saw). A
LoRA run's checkpoint holds the adapter (``adapter/``, a PEFT folder) and the tokenizer
in place of the whole model.
torch is imported inside these functions.
"""

from __future__ import annotations

import copy
import importlib
import json
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._policy import LocalPolicy, Policy, TinyPolicy
from gym._policy._grammar import allowed_tokens
from gym._policy._local import LocalModel, load_model
from gym._policy._tiny import TINY, build_tiny, save_tiny
from gym.train._batch import (
    Batch,
    batch_loss_logprobs,
    collate,
    sample_allowed,
    token_logprobs,
)
from gym.train._loss import LossConfig, LossMetrics
from gym.train._samples import Sample, TurnTokens
from gym.train._sync import LoraSettings, add_lora, save_lora

__all__ = ["CheckpointInfo", "LocalWeights", "UpdateMetrics", "PolicyKind"]

PolicyKind = Literal["tiny", "local"]
"""The in-process policies a trainer can update."""
CHECKPOINT_INFO = "checkpoint.json"
TRAINER_STATE = "trainer.pt"
ADAPTER = "adapter"


class CheckpointInfo(BaseModel):
    """What a checkpoint is: its run, its version, and everything it was trained on."""

    train_id: str
    """The training run."""
    version: int
    """Updates applied (its policy samples as version ``version``)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The training configuration."""
    tasks: list[str] = Field(default_factory=list)
    """``env_id/task_id`` of every task whose episodes it was trained on."""
    episodes: list[str] = Field(default_factory=list)
    """Ids of every episode whose samples went into its updates (all versions)."""
    stale: list[str] = Field(default_factory=list)
    """Ids of episodes left out for being older than the staleness bound allows."""
    runs: list[str] = Field(default_factory=list)
    """The runs (one per step) those episodes belong to."""


class UpdateMetrics(BaseModel):
    """What one step's update did."""

    loss: LossMetrics
    """The last iteration's loss metrics."""
    update_kl: float = 0.0
    """k3 estimate of KL(before || after) over the sampled tokens."""
    iterations: int = 1
    """Optimizer steps taken on the batch."""


@dataclass
class LocalWeights:
    """A local model being trained, its optimizer and its version.

    Attributes:
        loaded: the model, tokenizer and generation lock (shared with its policies).
        kind: tiny or local (which policy class samples from it).
        optimizer: the torch optimizer over its parameters.
        version: updates applied so far.
        reference: the frozen initial model, made only when a KL term needs it.
        lora: the adapter trained when only a LoRA adapter is (None: every weight).
    """

    loaded: LocalModel
    kind: PolicyKind
    optimizer: Any
    version: int = 0
    reference: Any = None
    lora: LoraSettings | None = None
    _initial: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def create(
        cls,
        kind: PolicyKind,
        model: str,
        *,
        seed: int,
        lr: float,
        lora: LoraSettings | None = None,
    ) -> LocalWeights:
        """Weights to train: a fresh tiny model from ``seed``, or a model folder.

        Args:
            kind: tiny or local.
            model: ``tiny`` (a fresh tiny model) or a folder / bundled name.
            seed: the fresh tiny model's initialisation seed.
            lr: the Adam learning rate.
            lora: train only a LoRA adapter injected into the model (the base frozen).
        """
        torch = _torch()
        if kind == "tiny" and model == TINY:
            loaded = build_tiny(seed)
        else:
            cached = load_model(model)  # the process's shared copy: train a copy of it
            loaded = replace(cached, model=copy.deepcopy(cached.model), lock=threading.Lock())
        params = add_lora(loaded.model, lora) if lora else loaded.model.parameters()
        optimizer = torch.optim.Adam(params, lr=lr)
        return cls(loaded=loaded, kind=kind, optimizer=optimizer, lora=lora)

    def policy_factory(self, **settings: Any) -> Callable[[], Policy]:
        """Builds policies over these weights (one per worker; they share the model).

        Args:
            **settings: the policy's keyword arguments (temperature, seed...).
        """
        cls = TinyPolicy if self.kind == "tiny" else LocalPolicy
        loaded = self.loaded

        def make() -> Policy:
            return cls.of(loaded, threads=None, **settings)

        return make

    def samples_allowed(
        self,
        samples: Sequence[Sample],
        turns: Sequence[Sequence[TurnTokens]],
        tools: Sequence[Sequence[dict[str, Any]]],
    ) -> list[Any]:
        """Each sample's allowed-token rows, replaying the grammar over its sampled turns.

        Args:
            samples: the samples.
            turns: for each sample, its episode's turns.
            tools: for each sample, the tools its episode offered.
        """
        grammar = self.loaded.grammar()
        vocab = int(self.loaded.model.get_output_embeddings().weight.shape[0])
        out = []
        for sample, episode_turns, offered in zip(samples, turns, tools, strict=True):
            rows = [
                allowed_tokens(grammar, list(offered), episode_turns[i].completion)
                for i in sample.turns
            ]
            out.append(sample_allowed(sample, rows, vocab))
        return out

    def batch(self, samples: Sequence[Sample], allowed: Sequence[Any] | None = None) -> Batch:
        """The samples as one padded batch."""
        pad = self.loaded.tokenizer.pad_token_id
        return collate(samples, pad if pad is not None else 0, allowed=allowed)

    def update(
        self, batch: Batch, config: LossConfig, *, iterations: int = 1, temperature: float = 1.0
    ) -> UpdateMetrics:
        """Optimizer steps on one batch, then the new version (the sync: same model object).

        With more than one iteration the ratio is taken against the logprobs before the
        first step (PPO-style clipping holds the later steps near the sampling policy):
        those of the first iteration's forward pass, which runs on the weights before any
        step (no extra pass for them).
        """
        torch = _torch()
        model = self.loaded.model
        with self.loaded.lock:
            model.train()
            try:
                before: Any = None
                for _ in range(iterations):
                    loss, metrics, logprobs = batch_loss_logprobs(
                        model,
                        batch,
                        config,
                        reference=self._reference,
                        old_logprobs=before,  # None at first: the ratio is exactly 1
                        temperature=temperature,
                    )
                    if before is None:
                        before = logprobs.detach()
                    self.optimizer.zero_grad()
                    loss.backward()  # type: ignore[no-untyped-call]
                    self.optimizer.step()
                after = self._logprobs(batch, temperature)
            finally:
                model.eval()
            delta = (after - before).masked_fill(~batch.loss_mask.bool(), 0.0)
            k3 = torch.exp(delta) - delta - 1
            tokens = max(int(batch.loss_mask.sum()), 1)
            self.version += 1
        return UpdateMetrics(
            loss=metrics, update_kl=float(k3.sum()) / tokens, iterations=iterations
        )

    def skip(self) -> None:
        """A step without an update (nothing to learn from) still makes a new version."""
        self.version += 1

    def _logprobs(self, batch: Batch, temperature: float) -> Any:
        torch = _torch()
        with torch.no_grad():
            return token_logprobs(
                self.loaded.model,
                batch.input_ids,
                batch.attention_mask,
                temperature=temperature,
                allowed=batch.allowed,
                needed=batch.loss_mask,
            )

    def _reference(self) -> Any:
        """The frozen initial model (copied on first use, so only when a KL term asks)."""
        if self.reference is None:
            if self._initial is None:
                raise ConfigError("the reference model must be kept before the first update")
            ref = copy.deepcopy(self.loaded.model)
            ref.load_state_dict(self._initial)
            ref.eval()
            self.reference = ref
        return self.reference

    def keep_reference(self) -> None:
        """Keep the current weights as the KL reference (call before training)."""
        self._initial = copy.deepcopy(self.loaded.model.state_dict())

    # -- checkpoints ---------------------------------------------------------------

    def save(self, folder: Path, info: CheckpointInfo) -> Path:
        """Write a checkpoint folder (replacing one there), atomically.

        Written beside it (``.tmp``, its info last), the folder there before moved aside
        (``.old``), the new one moved in, the old one removed: a kill at any moment leaves
        a whole checkpoint that `resume` finds (`_settled`).
        """
        torch = _torch()
        tmp, old = _beside(folder)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if self.lora is None:
            save_tiny(self.loaded, tmp)  # any local model: a Hugging Face folder
        else:
            save_lora(self.loaded.model, tmp / ADAPTER, self.lora)
            self.loaded.tokenizer.save_pretrained(tmp)
        state = {"model": self.loaded.model.state_dict(), "optimizer": self.optimizer.state_dict()}
        torch.save(state, tmp / TRAINER_STATE)
        (tmp / CHECKPOINT_INFO).write_text(info.model_dump_json(indent=2) + "\n")
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
        return folder

    def resume(self, folder: Path, train_id: str) -> CheckpointInfo | None:
        """Load a checkpoint of this training run from ``folder`` if there is one.

        Raises:
            ConfigError: the folder holds another training run's checkpoint.
        """
        info_path = _settled(folder)
        if info_path is None:
            return None
        info = CheckpointInfo.model_validate(json.loads(info_path.read_text()))
        if info.train_id != train_id:
            raise ConfigError(
                f"{folder} holds a checkpoint of training run {info.train_id}, not "
                f"{train_id}: choose another --out folder"
            )
        torch = _torch()
        state = torch.load(folder / TRAINER_STATE, weights_only=True)
        self.loaded.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = info.version
        return info


def _beside(folder: Path) -> tuple[Path, Path]:
    """Where `LocalWeights.save` writes a new checkpoint, and where it moves the old one."""
    return folder.with_name(folder.name + ".tmp"), folder.with_name(folder.name + ".old")


def _settled(folder: Path) -> Path | None:
    """The info file of the checkpoint in ``folder``, None when there is none.

    A save killed between its renames left the folder missing: the whole checkpoint
    beside it (the new one, else the old one; a folder is whole once its info is
    written) is moved into place first.
    """
    if (folder / CHECKPOINT_INFO).is_file():
        return folder / CHECKPOINT_INFO
    for side in _beside(folder):  # the new one first
        if (side / CHECKPOINT_INFO).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            side.rename(folder)
            return folder / CHECKPOINT_INFO
    return None


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise ConfigError("training needs torch: pip install -e '.[train]'") from exc
