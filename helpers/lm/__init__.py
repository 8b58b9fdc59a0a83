"""Language-model operations behind one public module.

Its shape follows lm-evaluation-harness's ``LM`` interface and minicons' scorers; each name is a
batched, tested function of one of the modules below (imported on first use):

==========================  =========================================================================
lm-evaluation-harness        here
==========================  =========================================================================
``loglikelihood_rolling``    :func:`score` — each text's log-likelihood (causal), pseudo-log-likelihood
                             (masked) or left-to-right permutation likelihood (XLNet), cached per sentence
``loglikelihood``            :func:`loglikelihood` — ``log p(continuation | context)``, causal LMs
``generate_until``           :func:`generate` — sampled or greedy continuations of prompts
==========================  =========================================================================

and what the bias metrics need besides: :func:`cloze_logprobs` (a candidate's log-probability in a
template's blank, any objective), :func:`top_k` (the most probable whole-word fill-ins),
:func:`word_embeddings` / :func:`sentence_embeddings`. How a model reads text (its start tokens, its
maximum length) is decided once, in :mod:`helpers.lm.conventions`; batching under a token budget
is :mod:`helpers.lm.batching`.

    >>> from helpers import lm, models
    >>> model = models.load("smollm2-135m")
    >>> lm.score(model, ["The cat sat."])                 # n_tokens, log_likelihood, perplexity
    >>> lm.loglikelihood(model, ["The capital of France is"], [" Paris"])
"""

from importlib import import_module

_PUBLIC = {"score": "scoring", "sentence_scores": "scoring", "loglikelihood": "logprobs", "generate": "generation",
           "cloze_logprobs": "cloze", "top_k": "fill", "word_embeddings": "embeddings",
           "sentence_embeddings": "embeddings"}
__all__ = list(_PUBLIC)


def __getattr__(name: str):
    """The public functions, imported on first use (``import helpers.lm`` loads no torch)."""
    if name in _PUBLIC:
        return getattr(import_module(f"helpers.lm.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module 'helpers.lm' has no attribute {name!r}")
