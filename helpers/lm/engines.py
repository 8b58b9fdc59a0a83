"""Which engine computes causal sentence log-likelihoods: transformers (always; the reference) or
vLLM (``--engine vllm``: large causal models on GPUs), behind a parity gate.

vLLM gives log-probabilities of a prompt's tokens (``SamplingParams(prompt_logprobs=0,
max_tokens=1)``; position 0 has none). :class:`VllmEngine` feeds it the token ids our
transformers path scores (``tokenizer(text)`` with the model's own special tokens, so BOS exactly
as :func:`helpers.lm.scoring.causal_scores` decides it) and sums positions 1..n-1, the same tokens.
Known upstream pitfalls make a gate mandatory: prompt log-probabilities that differ from
transformers by up to ~0.3 nats (vllm-project/vllm issues on prompt_logprobs accuracy), that
move with batch size and with shared prefixes (prefix caching is therefore off), a missing BOS
when a text prompt is re-tokenised (we pass token ids). So before its first sentence of a
model, the engine scores a seeded sample of the request (:data:`DEFAULT_PARITY_SAMPLE` texts)
with both engines and refuses to continue, one line with the largest difference, when any
sentence differs by more than ``tolerance`` nats (:func:`parity_gate`). Masked and permutation
models stay on transformers (one line says so). Scores of the vLLM engine are cached under their
own key (engine, vLLM version, dtype): never mixed with transformers' scores.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from helpers.errors import HarmsError, InputError

ENGINES = ("transformers", "vllm")
DEFAULT_PARITY_SAMPLE = 32
DEFAULT_PARITY_TOLERANCE = 0.05      # nats per sentence, log-likelihood summed over its tokens

__all__ = ["ENGINES", "VllmEngine", "parity_gate", "using", "active", "check_available",
           "DEFAULT_PARITY_SAMPLE", "DEFAULT_PARITY_TOLERANCE"]

_active: contextvars.ContextVar = contextvars.ContextVar("harms_engine", default=None)


def parity_gate(reference: pd.DataFrame, candidate: pd.DataFrame, texts: Sequence[str], *, model: str,
                tolerance: float = DEFAULT_PARITY_TOLERANCE) -> pd.DataFrame:
    """Per-sentence comparison of two engines' scores of the same ``texts`` (``n_tokens``,
    ``log_likelihood`` each); raises :class:`HarmsError` naming the largest difference when a
    sentence's token count differs or its log-likelihood differs by more than ``tolerance``."""
    out = pd.DataFrame({"text": list(texts), "n_tokens": reference["n_tokens"].to_numpy(),
                        "n_tokens_candidate": candidate["n_tokens"].to_numpy(),
                        "log_likelihood": reference["log_likelihood"].to_numpy(),
                        "log_likelihood_candidate": candidate["log_likelihood"].to_numpy()})
    out["difference"] = out["log_likelihood_candidate"] - out["log_likelihood"]
    if (out["n_tokens"] != out["n_tokens_candidate"]).any():
        row = out[out["n_tokens"] != out["n_tokens_candidate"]].iloc[0]
        raise HarmsError(f"vLLM parity gate, {model}: vLLM scored {row.n_tokens_candidate} tokens of a sentence "
                         f"where transformers scores {row.n_tokens} ({row.text[:60]!r}); not continuing")
    worst = out.loc[out["difference"].abs().idxmax()]
    if not abs(worst.difference) <= tolerance:
        raise HarmsError(f"vLLM parity gate, {model}: log-likelihoods differ by up to {abs(worst.difference):.4f} nats "
                         f"(> tolerance {tolerance:g}) on {len(out)} sampled sentences, e.g. {worst.text[:60]!r}: "
                         f"transformers {worst.log_likelihood:.4f}, vLLM {worst.log_likelihood_candidate:.4f}; "
                         "not continuing (score with --engine transformers, or raise --parity-tolerance knowingly)")
    out.attrs["max_abs_difference"] = float(abs(worst.difference))
    return out


class VllmEngine:
    """Causal sentence log-likelihoods from vLLM's prompt log-probabilities, gated by parity.

    ``make_llm(source, max_model_len)`` builds the vLLM ``LLM`` (default: :func:`_vllm_llm`, on
    the GPU, ``dtype``, prefix caching off); ``sampling_params`` defaults to
    ``SamplingParams(prompt_logprobs=0, max_tokens=1, temperature=0)``. The parity gate compares
    a seeded sample of each model's first request with transformers (``sample`` texts,
    ``seed``, ``tolerance`` nats); :attr:`parity` keeps each model's comparison.
    """

    def __init__(self, *, tolerance: float = DEFAULT_PARITY_TOLERANCE, sample: int = DEFAULT_PARITY_SAMPLE,
                 seed: int = 0, dtype: str = "float32", make_llm: Callable | None = None, sampling_params=None,
                 version: str | None = None):
        if not tolerance >= 0:
            raise InputError(f"--parity-tolerance must be >= 0, got {tolerance}")
        self.tolerance, self.sample, self.seed, self.dtype = tolerance, sample, seed, dtype
        self.make_llm = make_llm or (lambda source, max_len: _vllm_llm(source, max_len, dtype))
        self.sampling_params = sampling_params
        self.version = version or _vllm_version()
        self._llms: dict[str, object] = {}
        self.parity: dict[str, pd.DataFrame] = {}
        self._noted: set[str] = set()

    def cache_key(self) -> dict:
        return {"engine": "vllm", "vllm": self.version, "dtype": self.dtype}

    def note_not_causal(self, name: str, objective: str) -> None:
        if name not in self._noted:
            self._noted.add(name)
            print(f"harms: note: --engine vllm scores causal models only; {name} ({objective}) is scored with "
                  "transformers", file=sys.stderr)

    def _llm(self, loaded):
        from helpers.lm import conventions

        key = loaded.identity["weights"]
        if key not in self._llms:
            source = getattr(loaded.model, "name_or_path", None) or loaded.name
            self._llms[key] = self.make_llm(source, conventions.max_length(loaded))
        return self._llms[key]

    def _params(self):
        if self.sampling_params is None:
            from vllm import SamplingParams

            self.sampling_params = SamplingParams(prompt_logprobs=0, max_tokens=1, temperature=0.0)
        return self.sampling_params

    def sentence_scores(self, loaded, texts: Sequence[str]) -> pd.DataFrame:
        """``n_tokens`` and ``log_likelihood`` of each text: the sum of vLLM's prompt
        log-probabilities of tokens 1..n-1 of ``tokenizer(text)`` (token 0 is context only)."""
        from helpers.lm import conventions

        ids = loaded.tokenizer(list(texts), add_special_tokens=True, verbose=False)["input_ids"]
        limit = conventions.max_length(loaded)
        for i, row in enumerate(ids):
            if not row:
                raise InputError(f"{loaded.name}: text {i} has no tokens")
            if limit is not None and len(row) > limit:
                raise InputError(f"{loaded.name}: text {i} has {len(row)} tokens, more than the model's {limit}; "
                                 "--engine vllm scores one window per sentence: use --engine transformers "
                                 "(strided windows) for longer texts")
        outputs = self._llm(loaded).generate([{"prompt_token_ids": row} for row in ids], self._params(),
                                             use_tqdm=False)
        ll = np.zeros(len(ids))
        for i, (row, out) in enumerate(zip(ids, outputs)):
            logprobs = out.prompt_logprobs
            if logprobs is None or len(logprobs) != len(row):
                raise HarmsError(f"{loaded.name}: vLLM returned prompt log-probabilities for "
                                 f"{0 if logprobs is None else len(logprobs)} of the {len(row)} tokens of text {i}")
            ll[i] = sum(_logprob(logprobs[t], row[t], loaded.name) for t in range(1, len(row)))
        return pd.DataFrame({"n_tokens": [len(r) - 1 for r in ids], "log_likelihood": ll})

    def ensure_parity(self, loaded, request: Sequence[str], reference: Callable[[list[str]], pd.DataFrame]) -> None:
        """Run the parity gate once per model, on a seeded sample of ``request``."""
        if loaded.name in self.parity:
            return
        texts = list(dict.fromkeys(request))
        rng = np.random.default_rng(self.seed)
        picked = sorted(rng.choice(len(texts), size=min(self.sample, len(texts)), replace=False).tolist())
        sample = [texts[i] for i in picked]
        result = parity_gate(reference(sample), self.sentence_scores(loaded, sample), sample, model=loaded.name,
                             tolerance=self.tolerance)
        self.parity[loaded.name] = result
        print(f"harms: vLLM parity gate, {loaded.name}: {len(sample)} sampled sentences, largest |difference| "
              f"{result.attrs['max_abs_difference']:.2g} nats <= {self.tolerance:g}", file=sys.stderr)


def _logprob(entry, token_id: int, model: str) -> float:
    """The log-probability of ``token_id`` in one position of vLLM's ``prompt_logprobs``
    (a dict of token id -> Logprob)."""
    if entry is None or token_id not in entry:
        raise HarmsError(f"{model}: vLLM's prompt log-probabilities lack the prompt's own token {token_id}")
    return float(entry[token_id].logprob)


def _vllm_version() -> str:
    try:
        from importlib.metadata import version

        return version("vllm")
    except Exception:        # noqa: BLE001 - not installed: check_available says so
        return "not installed"


def check_available() -> None:
    """One line when vLLM cannot run here: not installed, or no CUDA GPU."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        raise HarmsError("--engine vllm needs vLLM, an optional dependency for CUDA GPUs: pip install "
                         "'harms-helpers[vllm]' (or pip install vllm) on a machine with a GPU") from None
    import torch

    if not torch.cuda.is_available():
        raise HarmsError("--engine vllm runs on a CUDA GPU and none is visible here; use --engine transformers")


def _vllm_llm(source: str, max_len: int | None, dtype: str):
    from vllm import LLM

    return LLM(model=source, tokenizer=source, dtype=dtype, max_model_len=max_len, enable_prefix_caching=False,
               seed=0, gpu_memory_utilization=0.6)


def active() -> VllmEngine | None:
    """The engine of the current run when it is vLLM, else None (transformers)."""
    return _active.get()


@contextlib.contextmanager
def using(engine: VllmEngine | None):
    """Within the block, causal sentence scores (:func:`helpers.lm.scoring.score`) come from ``engine``."""
    token = _active.set(engine)
    try:
        yield engine
    finally:
        _active.reset(token)
