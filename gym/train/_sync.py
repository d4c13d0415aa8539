"""Getting the trainer's new weights to the server that samples the episodes (vLLM).

``gym train grpo --policy openai`` samples its episodes from an OpenAI-compatible
server and keeps the weights it trains in this process. After each update the new
weights must reach the server, and the next episodes must ask for them by name; a
`WeightSync` does both and says what the server now serves (`Served`: the version and
the model name a request carries to get it). Three kinds (`SyncKind`):

- ``lora``: the trainer trains a LoRA adapter (peft, the ``lora`` extra) and saves each
  version as a PEFT folder (``adapter_config.json``, ``adapter_model.safetensors``)
  that the server can read; `LoraSync` loads it at run time through vLLM's dynamic
  LoRA endpoints (``POST /v1/load_lora_adapter {"lora_name", "lora_path"}``, then
  ``POST /v1/unload_lora_adapter`` of the version before). The server runs with
  ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``; requests name the
  adapter of the version (``boxgym-<train id>-v<version>``).
- ``full``: every parameter goes to a ``trl vllm-serve`` / vLLM weight-transfer server
  through TRL's ``VLLMClient`` (HTTP announces each batch, NCCL carries the tensors,
  then ``reset_prefix_cache``). NCCL needs CUDA on both sides: `FullSync` refuses to
  start without trl, vllm and a GPU (it is not tested on CPU machines).
- ``none``: nothing is sent; the server keeps its weights, so its episodes stay at
  version 0 and the staleness bound of the trainer leaves them out once it is more
  than ``max_staleness`` updates ahead (off-policy use only).

peft and TRL are imported inside the functions that need them.
"""

from __future__ import annotations

import importlib
import json
import logging
import random
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError, PolicyError
from gym._core._http import Backoff, RetriesSpent, post_json, server_message

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ADAPTER_CONFIG",
    "ADAPTER_WEIGHTS",
    "FullSync",
    "LoraSettings",
    "LoraSync",
    "NoSync",
    "Served",
    "ServerConfig",
    "SyncKind",
    "WeightSync",
    "add_lora",
    "lora_state",
    "make_sync",
    "save_lora",
]

SyncKind = Literal["lora", "full", "none"]
"""How new weights reach the sampling server."""
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
_PEFT_PREFIX = "base_model.model."  # how PEFT (and vLLM's LoRA loader) name adapter weights
_log = logging.getLogger("gym.train")


class LoraSettings(BaseModel):
    """The LoRA adapter the trainer trains (``--sync lora``)."""

    rank: int = Field(default=8, ge=1)
    """The adapter's rank r (the server's ``--max-lora-rank`` must be at least this)."""
    alpha: int = Field(default=16, ge=1)
    """LoRA alpha (the update is scaled by alpha / r)."""
    targets: list[str] = Field(default_factory=lambda: ["q_proj", "v_proj"])
    """Module names that get an adapter."""


class ServerConfig(BaseModel):
    """The sampling server of ``--policy openai`` and how weights reach it."""

    base_url: str
    """The API root, ending in ``/v1`` (not part of the training id)."""
    sync: SyncKind = "lora"
    """lora, full or none."""
    weights: str = ""
    """The trainer's copy of the served model: ``tiny`` or a model folder / bundled name
    ('' = the served model's name, read as such a folder)."""
    lora: LoraSettings = Field(default_factory=LoraSettings)
    """The adapter trained with ``sync="lora"``."""
    adapter_dir: str = ""
    """Where adapters are written ('' = ``<checkpoint folder>.adapters``, beside it; not
    part of the training id)."""
    server_adapter_dir: str = ""
    """The same folder as the server reads it, when it is mounted elsewhere there
    ('' = ``adapter_dir``; not part of the training id)."""


class Served(BaseModel):
    """What the server samples from now."""

    version: int
    """The policy version of the weights it holds."""
    model: str
    """The model name a request carries to sample from them."""


class WeightSync(Protocol):
    """Sends the trainer's weights to the sampling server."""

    served: Served
    """What the server samples from now."""

    def push(self, model: Any, version: int) -> Served:
        """Make the server sample from ``model`` (the weights of ``version``) from now on."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


class NoSync:
    """``--sync none``: the server keeps its own weights (version 0 for ever)."""

    def __init__(self, model: str) -> None:
        self.served = Served(version=0, model=model)

    def push(self, model: Any, version: int) -> Served:
        """Nothing is sent: the server still serves version 0."""
        return self.served

    def close(self) -> None:
        """Nothing to release."""


class LoraSync:
    """``--sync lora``: save each version's adapter, load it into the server by name.

    Args:
        base_url: the API root, ending in ``/v1``.
        name: the adapters' name stem (a version's adapter is ``<name>-v<version>``).
        folder: where this process writes the adapters.
        server_folder: the same folder as the server reads it (None: ``folder``).
        lora: the adapter's settings (written into its ``adapter_config.json``).
        base_model: the served base model's name (``base_model_name_or_path``).
        timeout: seconds one request may take (loading reads the folder).
        max_retries: failed attempts tolerated per request (connection errors, 5xx).
        transport: an httpx transport (tests).
    """

    def __init__(
        self,
        base_url: str,
        *,
        name: str,
        folder: Path,
        server_folder: str | None = None,
        lora: LoraSettings | None = None,
        base_model: str = "",
        timeout: float = 300.0,
        max_retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        import httpx

        self.name, self.folder = name, folder
        self.server_folder = (server_folder or str(folder)).rstrip("/")
        self.lora = lora or LoraSettings()
        self.base_model = base_model
        self.served = Served(version=-1, model="")
        self._retry = Backoff(max_retries, 1.0, 30.0, random.Random())
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), timeout=httpx.Timeout(timeout), transport=transport
        )

    def adapter_name(self, version: int) -> str:
        """The name requests carry to sample from ``version``."""
        return f"{self.name}-v{version}"

    def push(self, model: Any, version: int) -> Served:
        """Save the adapter of ``version``, load it into the server, unload the one before.

        Raises:
            PolicyError: the server refused the adapter or could not be reached.
        """
        save_lora(model, self.folder / f"v{version}", self.lora, self.base_model)
        name = self.adapter_name(version)
        body = {"lora_name": name, "lora_path": f"{self.server_folder}/v{version}"}
        if not self._post("/load_lora_adapter", body, tolerate="already"):
            self._post("/unload_lora_adapter", {"lora_name": name})  # a resumed version:
            self._post("/load_lora_adapter", body)  # the server holds an older copy of it
        before = self.served
        self.served = Served(version=version, model=name)
        if before.model and before.model != name:
            self._post("/unload_lora_adapter", {"lora_name": before.model}, tolerate="found")
        _log.info("server samples from %s (%s)", name, body["lora_path"])
        return self.served

    def close(self) -> None:
        """Close the HTTP client (the last adapter stays loaded: it is the trained policy)."""
        self._client.close()

    def _post(self, path: str, body: dict[str, Any], tolerate: str = "") -> bool:
        """POST one request; False when a 4xx's message holds ``tolerate`` (else it raises)."""

        def read(response: httpx.Response) -> bool:
            if response.status_code < 400:
                return True
            text = server_message(response)
            if tolerate and tolerate in text.lower():
                return False
            raise PolicyError(
                f"POST {self._client.base_url}{path} answered HTTP {response.status_code}: "
                f"{text} (the server needs --enable-lora, a --max-lora-rank of at least "
                f"{self.lora.rank}, VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, and read access "
                f"to {self.server_folder})"
            )

        try:
            return post_json(self._client, path, body, read, self._retry)[0]
        except RetriesSpent as exc:
            raise PolicyError(
                f"POST {self._client.base_url}{path} {exc}; is the server up?"
            ) from None


class FullSync:
    """``--sync full``: every parameter to a vLLM weight-transfer server, through TRL.

    TRL's ``VLLMClient`` announces each batch of tensors over HTTP (``/update_weights``
    between ``/start_weight_update`` and ``/finish_weight_update``) and broadcasts them
    over NCCL, then the prefix cache is reset. NCCL runs on CUDA devices only.

    Args:
        base_url: the API root, ending in ``/v1`` (the client takes the server's root).
        model: the served model name (requests keep naming it).
        device: the CUDA device the trainer's side of the transfer uses.
        group_port: the port of the NCCL group.
        timeout: seconds to wait for the server to answer its health check.

    Raises:
        ConfigError: trl or vllm is not installed, or there is no CUDA device.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        device: int = 0,
        group_port: int = 51216,
        timeout: float = 60.0,
    ) -> None:
        try:
            module = importlib.import_module("trl.generation.vllm_client")
            self._client = module.VLLMClient(
                base_url=base_url.rstrip("/").removesuffix("/v1"),
                group_port=group_port,
                connection_timeout=timeout,
            )
            self._client.init_communicator(device=device)
        except (ImportError, NotImplementedError, AssertionError, RuntimeError) as exc:
            raise ConfigError(
                f"--sync full needs TRL's VLLMClient (pip install 'trl[vllm]'), a server "
                f"started with `trl vllm-serve` (vLLM's NCCL weight transfer) and a CUDA "
                f"device for NCCL: {exc}. Without a GPU use --sync lora."
            ) from exc
        self._device = f"cuda:{device}"
        self.served = Served(version=-1, model=model)

    def push(self, model: Any, version: int) -> Served:
        """Send every parameter (moved to the CUDA device), then reset the prefix cache."""
        params = list(model.named_parameters())
        metadata = [(n, str(p.dtype).removeprefix("torch."), list(p.shape)) for n, p in params]
        tensors = ((n, p.data.to(self._device)) for n, p in params)
        with self._client.weight_update():
            self._client.update_named_params(metadata, tensors)
        self._client.reset_prefix_cache()
        self.served = Served(version=version, model=self.served.model)
        return self.served

    def close(self) -> None:
        """Close the NCCL group."""
        self._client.close_communicator()


def make_sync(config: ServerConfig, *, model: str, name: str, folder: Path) -> WeightSync:
    """The sync a server configuration asks for.

    Args:
        config: the server and the sync kind.
        model: the served model name (the base model of LoRA adapters).
        name: the adapters' name stem (``boxgym-<train id>``).
        folder: where adapters go when the configuration names no folder.
    """
    if config.sync == "none":
        return NoSync(model)
    if config.sync == "full":
        return FullSync(config.base_url, model=model)
    return LoraSync(
        config.base_url,
        name=name,
        folder=Path(config.adapter_dir) if config.adapter_dir else folder,
        server_folder=config.server_adapter_dir or None,
        lora=config.lora,
        base_model=model,
    )


# -- the adapter in the trainer's model ----------------------------------------------------


def _peft() -> Any:
    try:
        return importlib.import_module("peft")
    except ImportError as exc:
        raise ConfigError("--sync lora needs peft: pip install -e '.[lora]'") from exc


def add_lora(model: Any, lora: LoraSettings) -> list[Any]:
    """Inject a fresh LoRA adapter into ``model`` in place; its parameters (to train).

    The base weights are frozen; the adapter starts as the identity (B = 0), so version
    0 samples as the base model does. The model keeps its class (generation, forward
    passes and state dicts work as before, with the adapter's modules in them).
    """
    peft = _peft()
    config = peft.LoraConfig(
        r=lora.rank, lora_alpha=lora.alpha, target_modules=list(lora.targets), lora_dropout=0.0
    )
    with warnings.catch_warnings():  # peft probes attributes transformers deprecates
        warnings.simplefilter("ignore", FutureWarning)
        peft.inject_adapter_in_model(config, model)
    trainable = []
    for name, param in model.named_parameters():
        param.requires_grad_("lora_" in name)
        if param.requires_grad:
            trainable.append(param)
    if not trainable:
        raise ConfigError(f"no module of the model matches the LoRA targets {lora.targets}")
    return trainable


def lora_state(model: Any) -> dict[str, Any]:
    """The adapter's tensors, named as PEFT saves them (``base_model.model.<module>...``)."""
    state = _peft().get_peft_model_state_dict(model)
    return {_PEFT_PREFIX + k: v.detach().cpu().contiguous() for k, v in state.items()}


def save_lora(model: Any, folder: Path, lora: LoraSettings, base_model: str = "") -> Path:
    """Write the adapter of ``model`` as a PEFT folder (what vLLM and peft load), atomically."""
    from safetensors.torch import save_file

    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    save_file(lora_state(model), str(tmp / ADAPTER_WEIGHTS))
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": lora.rank,
        "lora_alpha": lora.alpha,
        "lora_dropout": 0.0,
        "target_modules": list(lora.targets),
        "bias": "none",
        "fan_in_fan_out": False,
        "modules_to_save": None,
        "inference_mode": True,
    }
    (tmp / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2) + "\n")
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    tmp.rename(folder)
    return folder
