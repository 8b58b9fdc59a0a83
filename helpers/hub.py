"""Can the Hugging Face hub be used here? One probe, a few seconds at most, for every path that
would otherwise wait on the network (models, classifiers, hub data sets)."""

from __future__ import annotations

import os

__all__ = ["cached_hub_file", "hub_offline_reason", "hub_unusable_reason"]


def hub_offline_reason() -> str | None:
    """Why the Hugging Face hub cannot be used (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE set, or
    a 3-second probe of the endpoint fails), else None."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return f"{var}={os.environ[var]}"
    import urllib.error
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=3).close()
    except urllib.error.HTTPError:
        return None                          # an HTTP answer means the hub is reachable
    except (OSError, ValueError):
        return "the Hugging Face hub is unreachable"
    return None


def cached_hub_file(repo_id: str, filename: str = "config.json", *, repo_type: str = "model",
                    revision: str | None = None) -> str | None:
    """The path of ``filename`` of hub repository ``repo_id`` in the local Hugging Face cache
    (``HF_HUB_CACHE``, the layout ``hf_hub_download`` writes), or None: read without the network,
    so a cache filled once, or built by :mod:`helpers.rehearsal`, serves ``HF_HUB_OFFLINE=1``."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, revision=revision, repo_type=repo_type)
    return found if isinstance(found, str) else None


def hub_unusable_reason(repo_id: str, filename: str = "config.json", **kwargs) -> str | None:
    """Why ``repo_id`` cannot be read here: None when its ``filename`` is in the local cache or
    the hub answers, else :func:`hub_offline_reason`'s reason."""
    return None if cached_hub_file(repo_id, filename, **kwargs) else hub_offline_reason()
