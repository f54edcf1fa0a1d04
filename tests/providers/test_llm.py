"""The provider layer against a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from providers.llm import EndpointConfig, LLMClient, ProviderError
from providers.scripted_openai import Reply, ScriptedOpenAI, sequence

USER = [{"role": "user", "content": "What is 6 * 7?"}]


def client(server: ScriptedOpenAI, **options: Any) -> LLMClient:
    config = EndpointConfig(
        model="openai/scripted", api_base=server.base_url, api_key="sk-test", backoff_base_s=0.01, **options
    )
    return LLMClient(config)


def test_a_call_returns_text_usage_and_priced_cost() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=100, completion_tokens=20)) as server:
        llm = client(server, input_cost_per_mtok=2.0, output_cost_per_mtok=10.0)
        completion = llm.complete(USER)
    assert completion.text == "42"
    assert (completion.tokens_in, completion.tokens_out) == (100, 20)
    assert completion.cost_usd == pytest.approx((100 * 2 + 20 * 10) / 1e6)
    assert server.requests[0]["messages"] == USER
    assert server.requests[0]["_headers"]["authorization"] == "Bearer sk-test"


def test_an_unpriced_endpoint_costs_what_litellms_price_map_says() -> None:
    """litellm prices the call as it makes it; a model missing from its map costs 0."""
    import litellm

    with ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=1000, completion_tokens=200)) as server:
        mapped = LLMClient(EndpointConfig(model="openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test"))
        unmapped = client(server)
        priced, unpriced = mapped.complete(USER), unmapped.complete(USER)
    expected = litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=200)
    assert priced.cost_usd == pytest.approx(sum(expected)) and priced.cost_usd > 0
    assert unpriced.cost_usd == 0


@pytest.mark.parametrize(
    "failure",
    [Reply(status=429, headers={"Retry-After": "0"}), Reply(status=500), Reply(status=503)],
    ids=["429", "500", "503"],
)
def test_transient_errors_are_retried(failure: Reply) -> None:
    with ScriptedOpenAI(sequence([failure, failure, Reply(content="ok")])) as server:
        llm = client(server)
        assert llm.complete(USER).text == "ok"
    assert len(server.requests) == 3
    assert llm.meter.retries == 2
    assert llm.meter.calls == 1


def test_a_timeout_is_retried_then_reported() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="late", delay_s=1.0)) as server:
        llm = client(server, timeout_s=0.2, max_retries=1)
        with pytest.raises(ProviderError) as caught:
            llm.complete(USER)
    assert caught.value.kind == "timeout"
    assert len(server.requests) == 2


def test_retries_stop_at_the_limit() -> None:
    with ScriptedOpenAI(lambda body: Reply(status=500)) as server:
        llm = client(server, max_retries=2)
        with pytest.raises(ProviderError) as caught:
            llm.complete(USER)
    assert caught.value.kind == "server_error"
    assert caught.value.transient
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(status=401, content="bad key"), "auth"),
        (Reply(status=400, content="bad request: unknown field"), "bad_request"),
        (
            Reply(status=400, content="This model's maximum context length is 4097 tokens, you requested 9000"),
            "context_length",
        ),
        (Reply(status=404, content="no such model"), "not_found"),
    ],
    ids=["auth", "bad_request", "context_length", "not_found"],
)
def test_permanent_errors_are_not_retried(reply: Reply, kind: str) -> None:
    with ScriptedOpenAI(lambda body: reply) as server:
        llm = client(server)
        with pytest.raises(ProviderError) as caught:
            llm.complete(USER)
    assert caught.value.kind == kind
    assert not caught.value.transient
    assert len(server.requests) == 1
    assert "litellm." not in caught.value.message


def test_truncated_json_is_a_server_error() -> None:
    with (
        ScriptedOpenAI(lambda body: Reply(raw_body=b'{"id": "x", "choi')) as server,
        pytest.raises(ProviderError) as caught,
    ):
        client(server, max_retries=0).complete(USER)
    assert caught.value.kind == "server_error"


def test_retry_after_is_honoured() -> None:
    waits: list[float] = []
    with ScriptedOpenAI(sequence([Reply(status=429, headers={"Retry-After": "3"}), Reply(content="ok")])) as server:
        config = EndpointConfig(model="openai/scripted", api_base=server.base_url, api_key="k")
        llm = LLMClient(config, sleep=waits.append)
        llm.complete(USER)
    assert waits == [3.0]


def test_backoff_grows_with_jitter() -> None:
    llm = LLMClient(EndpointConfig(model="openai/x", backoff_base_s=1.0, backoff_max_s=5.0))
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 5.0)]:
        waits = [llm._backoff(attempt, None) for _ in range(50)]
        assert all(0 <= wait <= ceiling for wait in waits)
        assert max(waits) > ceiling / 3  # jittered, not a constant


def test_the_key_is_not_in_the_config_repr() -> None:
    assert "sk-secret" not in repr(EndpointConfig(model="openai/x", api_key="sk-secret"))


def test_an_endpoint_nobody_listens_on_is_a_connection_error() -> None:
    """litellm reports a refused connection as a 500; it is named for what it is."""
    with ScriptedOpenAI(lambda body: Reply(content="42")) as server:
        llm = client(server, max_retries=1)
    # The server is stopped and its port closed: nothing listens there now.
    with pytest.raises(ProviderError) as caught:
        llm.complete(USER)
    assert caught.value.kind == "connection"


def test_litellms_own_logging_runs_only_where_a_callback_would_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """No litellm callback configured: no logging work is handed to litellm's logging thread
    (it competed with the caller for the GIL); one configured: it gets every call."""
    import litellm
    from litellm import utils as litellm_utils

    handed: list[object] = []
    submit = litellm_utils.executor.submit

    def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(fn)
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(litellm_utils.executor, "submit", counted)
    logged = threading.Event()
    with ScriptedOpenAI(lambda body: Reply(content="42")) as server:
        assert client(server).complete(USER).text == "42"
        assert handed == []
        monkeypatch.setattr(litellm, "success_callback", [lambda *args: logged.set()])
        assert client(server).complete(USER).text == "42"
        assert logged.wait(5), "the configured callback never got the call"
    assert len(handed) == 1
