"""The gateway bench's upstream (bench/gateway.py): the scripted OpenAI-compatible server
(providers/scripted_openai.py) in a process of its own on 127.0.0.1, every reply at once,
content "42", 10 + 5 tokens; and the LiteLLM config that both LiteLLM Proxy and Orchestra's
pool are made from, its key read from the environment (KEY_ENV).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench.processes import _die_with_parent, stop

MODEL = "scripted"
KEY_ENV = "GATEWAY_UPSTREAM_KEY"
UPSTREAM_KEY = "sk-upstream-bench"
ANSWER = "42"
GATEWAY = Path(__file__).resolve().with_name("gateway.py")  # the upstream's process is `gateway.py --serve`


# The upstream, in its own process.


def serve() -> None:
    from providers.scripted_openai import Reply, ScriptedOpenAI

    with ScriptedOpenAI(lambda body: Reply(content=ANSWER, prompt_tokens=10, completion_tokens=5)) as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)


class Upstream:
    """The scripted server in a process of its own (its CPU is not this process's, nor its GIL;
    `bench/gateway.py --serve` runs `serve`); `base_url` once it listens."""

    def __init__(self) -> None:
        command = [sys.executable, str(GATEWAY), "--serve"]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=_die_with_parent()
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url:
            stop(self.process, group=False)
            raise RuntimeError("the scripted upstream did not start")

    def __enter__(self) -> Upstream:
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self.process, group=False)


def litellm_config(base_url: str) -> str:
    """The LiteLLM config both the proxy and Orchestra's pool are made from."""
    import yaml

    config = {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {
                    "model": f"openai/{MODEL}",
                    "api_base": base_url,
                    "api_key": f"os.environ/{KEY_ENV}",
                },
            }
        ],
        "router_settings": {"num_retries": 0},  # as the direct call and the clients: no retries
    }
    return str(yaml.safe_dump(config, sort_keys=False))
