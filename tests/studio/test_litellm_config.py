"""Pools from LiteLLM Proxy configs (`manage.py import_litellm_config`) and back
(`manage.py export_litellm_config`), on real PostgreSQL."""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from studio.crypto import decrypt_secret
from studio.errors import Conflict, Invalid
from studio.models import Admissibility, ModelEndpoint, ModelPool
from studio.services.litellm_config import pool_from_litellm_config, read_model_list
from tests.factories import PrimitiveFactory
from workers.synthetic_config import DEFAULT_CONFIG, litellm_config

pytestmark = pytest.mark.django_db

CONFIG = """
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/TEST_OPENAI_KEY
      input_cost_per_token: 0.0000025
      output_cost_per_token: 0.00001
      rpm: 60
    model_info:
      max_input_tokens: 128000
      orchestra: {primitives: [direct, cot], descriptors: {family: gpt}}
  - model_name: local
    litellm_params:
      model: openai/llama
      api_base: http://127.0.0.1:9/v1
  - model_name: local
    litellm_params:
      model: openai/llama-b
      api_base: http://127.0.0.1:9/v1
      api_key: sk-plain
"""


@pytest.fixture(autouse=True)
def primitives() -> None:
    for name in ("direct", "cot"):
        PrimitiveFactory(name=name)


def test_a_config_makes_a_pool_with_prices_keys_and_admissible_pairs() -> None:
    made = pool_from_litellm_config(name="mine", text=CONFIG, environ={"TEST_OPENAI_KEY": "sk-env"})

    rows = {row.name: row for row in ModelEndpoint.objects.filter(pool=made.pool)}
    assert sorted(rows) == ["gpt-4o", "local", "local-2"]  # LiteLLM's shared names made unique
    gpt = rows["gpt-4o"]
    assert (gpt.model, gpt.input_cost_per_mtok, gpt.output_cost_per_mtok) == (
        "openai/gpt-4o",
        Decimal("2.5"),
        Decimal("10"),
    )
    assert gpt.context_window == 128000 and gpt.descriptors == {"family": "gpt", "api_key_env": "TEST_OPENAI_KEY"}
    assert decrypt_secret(gpt.api_key_encrypted) == "sk-env" and "sk-env" not in gpt.api_key_encrypted
    assert rows["local"].api_base == "http://127.0.0.1:9/v1" and not rows["local"].has_api_key
    assert rows["local"].input_cost_per_mtok is None
    pairs = set(Admissibility.objects.filter(endpoint__pool=made.pool).values_list("endpoint__name", "primitive__name"))
    assert pairs == {("gpt-4o", "direct"), ("gpt-4o", "cot"), ("local", "direct"), ("local-2", "direct")}
    assert any("plain text" in w and w.startswith("local-2") for w in made.warnings)
    assert any("not imported: rpm" in w for w in made.warnings)


def one(params: dict[str, object], info: dict[str, object] | None = None, name: str | None = "a") -> str:
    """A config of one entry: `params` beside model openai/x."""
    entry: dict[str, object] = {"litellm_params": {"model": "openai/x", **params}}
    if name is not None:
        entry["model_name"] = name
    if info is not None:
        entry["model_info"] = info
    return yaml.safe_dump({"model_list": [entry]})


PARAMS = "model_list[0].litellm_params"


@pytest.mark.parametrize(
    ("text", "environ", "field", "says"),
    [
        ("model_list: []", {}, "model_list", "no model_list"),
        ("[1, 2", {}, "config", "not YAML"),
        (one({}, name=None), {}, "model_list[0].model_name", "model_name"),
        (one({"model": "openai/*"}), {}, f"{PARAMS}.model", "one model"),
        (CONFIG, {}, f"{PARAMS}.api_key", "TEST_OPENAI_KEY, which is not set"),
        (one({"api_base": "ftp://h"}), {}, f"{PARAMS}.api_base", "http"),
        (one({"input_cost_per_token": -1}), {}, f"{PARAMS}.input_cost_per_token", "dollars per token"),
        (one({"output_cost_per_token": 2}), {}, f"{PARAMS}.output_cost_per_token", "under 1"),
        (one({}, {"orchestra": {"primitives": ["nope"]}}), {}, "model_list[0].model_info.orchestra.primitives",
         "Unknown primitive(s) nope"),
    ],
)  # fmt: skip
def test_a_bad_config_names_its_problem_and_writes_nothing(
    text: str, environ: dict[str, str], field: str, says: str
) -> None:
    with pytest.raises(Invalid) as caught:
        pool_from_litellm_config(name="bad", text=text, environ=environ)

    assert caught.value.extra["field"] == field and says in caught.value.message
    assert not ModelPool.objects.filter(name="bad").exists() and not ModelEndpoint.objects.exists()


def test_an_existing_pool_name_is_a_conflict() -> None:
    ModelPool.objects.create(name="taken")
    with pytest.raises(Conflict):
        pool_from_litellm_config(name="taken", text=CONFIG, environ={"TEST_OPENAI_KEY": "k"})
    assert not ModelEndpoint.objects.exists()


def test_the_commands_round_trip_a_config_and_never_write_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_OPENAI_KEY", "sk-secret-env")
    source = tmp_path / "config.yaml"
    source.write_text(CONFIG)
    out, err = io.StringIO(), io.StringIO()
    call_command("import_litellm_config", str(source), "--pool", "mine", stdout=out, stderr=err)
    assert "3 endpoint(s)" in out.getvalue() and "key from TEST_OPENAI_KEY" in out.getvalue()
    assert "plain text" in err.getvalue()

    written = tmp_path / "back.yaml"
    err = io.StringIO()
    call_command("export_litellm_config", "--pool", "mine", "--out", str(written), stderr=err)
    text = written.read_text()
    assert "sk-secret-env" not in text and "sk-plain" not in text
    assert "environment: LOCAL_2_API_KEY, TEST_OPENAI_KEY." in err.getvalue()
    exported = {entry["model_name"]: entry for entry in yaml.safe_load(text)["model_list"]}
    gpt = exported["gpt-4o"]
    assert gpt["litellm_params"]["api_key"] == "os.environ/TEST_OPENAI_KEY"
    assert gpt["litellm_params"]["input_cost_per_token"] == pytest.approx(2.5e-6)
    assert gpt["model_info"]["orchestra"] == {"primitives": ["cot", "direct"], "descriptors": {"family": "gpt"}}

    # the export imports again as the same pool
    monkeypatch.setenv("LOCAL_2_API_KEY", "sk-plain")
    again = pool_from_litellm_config(
        name="again", text=text, environ={"TEST_OPENAI_KEY": "sk-secret-env", "LOCAL_2_API_KEY": "sk-plain"}
    )
    fields = ("name", "model", "api_base", "input_cost_per_mtok", "output_cost_per_mtok", "context_window")
    assert list(again.pool.endpoints.order_by("name").values_list(*fields)) == list(
        ModelEndpoint.objects.filter(pool__name="mine").order_by("name").values_list(*fields)
    )
    assert not again.warnings


def test_the_commands_name_their_errors(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_litellm_config", str(tmp_path / "none.yaml"), "--pool", "p")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model_list: [{model_name: a}]")
    with pytest.raises(CommandError, match="litellm_params"):
        call_command("import_litellm_config", str(bad), "--pool", "p")
    with pytest.raises(CommandError, match="no pool 'nowhere'"):
        call_command("export_litellm_config", "--pool", "nowhere")


def test_the_synthetic_pools_config_reads_as_its_models_at_their_prices() -> None:
    text = yaml.safe_dump(litellm_config(DEFAULT_CONFIG, "http://127.0.0.1:8011/v1", ["direct", "cot"]))
    entries = read_model_list(text, {"SYNTHETIC_POOL_KEY": "any"})

    assert [(e.name, e.model, e.primitives) for e in entries] == [
        (m.name, f"openai/{m.name}", ["direct", "cot"]) for m in DEFAULT_CONFIG.models
    ]
    for entry, model in zip(entries, DEFAULT_CONFIG.models, strict=True):
        assert entry.input_cost_per_mtok == Decimal(str(model.input_cost_per_mtok)).quantize(Decimal("0.000001"))
        assert entry.output_cost_per_mtok == Decimal(str(model.output_cost_per_mtok)).quantize(Decimal("0.000001"))
        assert entry.descriptors == {"synthetic": True, "api_key_env": "SYNTHETIC_POOL_KEY"}
