"""Can the Hugging Face hub be used here? One probe, a few seconds at most, for every path that
would otherwise wait on the network (models, classifiers, hub data sets)."""

from __future__ import annotations

import os

__all__ = ["hub_offline_reason"]


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
