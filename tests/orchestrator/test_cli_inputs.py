"""Bad input to the command-line tools: one line naming the problem (exit 2), never a stack
trace, and never an output file lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import evaluate, train_policy, train_rm
from orchestrator.configs import ConfigError
from orchestrator.learning.method import LearnedConfig
from orchestrator.outcomes import OutcomeFormatError, PriceError, read_outcomes, read_prices, write_outcomes
from orchestrator.train_rm import RMConfig
from tests.orchestrator.synthetic import record, write
from workers import replay_check
from workers.importers.__main__ import main as importers_main


@pytest.fixture(autouse=True)
def embedding_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    good = write(tmp_path / "good.jsonl.gz", [record(f"q{k}", m, 1.0, c) for k in range(4) for m, c in [("a", 1e-3)]])
    (tmp_path / "notgzip.jsonl.gz").write_text("plain text\n")
    (tmp_path / "cut.jsonl.gz").write_bytes(good.read_bytes()[:-12])
    (tmp_path / "latin1.jsonl").write_bytes(b'{"source": "caf\xe9"}\n')
    (tmp_path / "empty.jsonl").write_text("")
    write(tmp_path / "nocost.jsonl", [record("q0", "a", 1.0, None), record("q0", "b", 0.0, None)])
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "typo.json").write_text(json.dumps({"threds": 2}))
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "prices.json").write_text(json.dumps({"a": {"input_per_mtok": "1", "output_per_mtok": 2}}))
    (tmp_path / "priced.json").write_text(json.dumps({"prices": str(tmp_path / "folder" / "prices.json")}))
    named = {path.name.split(".")[0]: path for path in tmp_path.iterdir()}
    return {**named, "prices": tmp_path / "folder" / "prices.json"}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("notgzip", "cannot be read as gzip-compressed UTF-8 JSON Lines"),
        ("cut", "cannot be read as gzip-compressed UTF-8 JSON Lines"),
        ("latin1", "latin1.jsonl: cannot be read as UTF-8 JSON Lines"),
    ],
)
def test_an_unreadable_outcome_file_is_a_format_error_naming_it(files, name, message) -> None:
    with pytest.raises(OutcomeFormatError, match=message) as error:
        list(read_outcomes(files[name]))
    assert str(files[name]) in str(error.value)


def test_a_failed_write_leaves_the_earlier_file_whole(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl.gz", [record("q0", "a", 1.0, 0.1)])
    before = path.read_bytes()

    def failing():
        yield record("q1", "a", 1.0, 0.1)
        raise RuntimeError("the source broke halfway")

    with pytest.raises(RuntimeError):
        write_outcomes(path, failing())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl.gz"]  # no temporary file left


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "not a JSON object but list"),
        ('{"m": 3}', "the price of 'm' needs input_per_mtok and output_per_mtok"),
        ('{"m": {"input_per_mtok": "1", "output_per_mtok": 2}}', "the price of 'm' needs"),
        ('{"m": {"input_per_mtok": -1, "output_per_mtok": 2}}', "the price of 'm' needs"),
        ("{oops", "the price table .*prices.json: Expecting property name"),
    ],
)
def test_a_bad_price_table_is_refused_by_name(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(PriceError, match=message):
        read_prices(path)


def test_configs_name_every_bad_field_and_keep_their_defaults() -> None:
    assert LearnedConfig.from_mapping(None) == LearnedConfig() and RMConfig.from_mapping({}) == RMConfig()
    assert LearnedConfig.from_mapping({"sft": {"epochs": "3"}}).sft.epochs == 3
    with pytest.raises(ConfigError) as error:
        LearnedConfig.from_mapping({"sft": {"bach_size": 8, "epochs": "x"}, "threads": 0, "knobs": "ab"})
    for problem in (
        "sft.bach_size: not a known option",
        "sft.epochs: Input should be a valid integer",
        "threads: Input should be greater than or equal to 1",
        "knobs: Input should be a valid tuple",
    ):
        assert problem in str(error.value)
    with pytest.raises(ConfigError, match="pairs.sources: unknown 'bogus'"):
        RMConfig.from_mapping({"pairs": {"sources": ["bogus"]}})
    with pytest.raises(ConfigError, match="train.batch_size: Input should be greater than or equal to 1"):
        RMConfig.from_mapping({"train": {"batch_size": 0}})
    with pytest.raises(ConfigError, match=r"^sft: lam_min \(3.0\) must be at most lam_max \(2.0\)$"):
        LearnedConfig.from_mapping({"sft": {"lam_min": 3}})
    with pytest.raises(ConfigError, match=r"^rl: lam_min \(0.5\) must be at most lam_max \(0.1\)$"):
        LearnedConfig.from_mapping({"rl": {"lam_min": 0.5, "lam_max": 0.1}})
    assert LearnedConfig.from_mapping({"rl": {"lam_min": 0.1, "lam_max": 0.1}}).rl.lam_max == 0.1


def usage_error(main, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--outcomes", "{notgzip}"], "cannot be read as gzip-compressed"),
        (["--outcomes", "{empty}"], "no item has a pair with a recorded score and a known cost"),
        (["--outcomes", "{nocost}"], "no item has a pair with a recorded score and a known cost"),
        (["--outcomes", "{good}", "--seed", "-1"], "argument --seed: a seed is from 0 to 4294967295"),
        (["--outcomes", "{good}", "--epochs", "-2"], "argument --epochs: must be 0 or more"),
        (["--outcomes", "{good}", "--config", "{broken}"], "--config {broken}: Expecting property name"),
        (["--outcomes", "{good}", "--config", "{typo}"], "threds: not a known option"),
        (["--outcomes", "{good}", "--config", "{folder}"], "--config {folder}:"),
        (["--outcomes", "{good}", "--prices", "{prices}"], "the price of 'a' needs"),
        (["--outcomes", "{good}", "--out", "{folder}"], "is a folder; give a file name"),
        (["--outcomes", "{good}", "--out", "{good}/policy.pt"], "is a file, not a folder"),
    ],
)
@pytest.mark.parametrize("main", [train_policy.main, train_rm.main], ids=["train_policy", "train_rm"])
def test_the_trainers_refuse_bad_input_in_one_line(main, argv, message, files, capsys) -> None:
    argv = [a.format(**files) for a in argv]
    assert message.format(**files) in usage_error(main, argv, capsys)


def test_train_rm_says_when_no_pair_can_be_built(tmp_path: Path, capsys) -> None:
    single = write(tmp_path / "one-model.jsonl", [record(f"q{k}", "a", 1.0, 1e-3) for k in range(6)])
    assert "no preference pairs could be built" in usage_error(train_rm.main, ["--outcomes", str(single)], capsys)


def test_train_rm_names_an_unreadable_preference_file(files, capsys) -> None:
    argv = ["--outcomes", str(files["good"]), "--preferences", str(files["notgzip"])]
    assert "the file cannot be read as UTF-8 JSON Lines" in usage_error(train_rm.main, argv, capsys)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--outcomes", "{good}", "--methods", "learned", "--learned-config", "{broken}"], "--learned-config"),
        (["--outcomes", "{good}", "--methods", "learned", "--learned-config", "{typo}"], "threds: not a known"),
        (["--outcomes", "{good}", "--methods", "learned", "--learned-config", "{priced}"], "the price of 'a' needs"),
        (["--outcomes", "{good}", "--methods", "cheapest", "--json", "{folder}"], "is a folder"),
        (["--outcomes", "{good}", "--train", "{empty}", "--methods", "cheapest"], "no records to fit on"),
        (["--outcomes", "{cut}", "--methods", "cheapest"], "cannot be read as gzip-compressed"),
        (["--outcomes", "{good}", "--seed", "99999999999999999999"], "a seed is from 0 to"),
    ],
)
def test_evaluate_refuses_bad_input_before_the_work(argv, message, files, capsys) -> None:
    assert message in usage_error(evaluate.main, [a.format(**files) for a in argv], capsys)


def test_replay_check_names_a_bad_file(files, capsys) -> None:
    assert "no such file" in usage_error(replay_check.main, [str(files["good"]) + ".missing"], capsys)
    assert "cannot be read as gzip" in usage_error(replay_check.main, [str(files["notgzip"])], capsys)


def test_the_importers_check_their_folders_before_writing(tmp_path: Path, files, capsys) -> None:
    out = files["good"]
    before = out.read_bytes()
    argv = ["routerbench", "--src", str(tmp_path / "nope"), "--out", str(out)]
    assert "no such folder" in usage_error(importers_main, argv, capsys)
    shared = tmp_path / "shared"
    shared.mkdir()
    argv = ["all", "--shared", str(shared), "--out-dir", str(tmp_path / "outdir")]
    assert "no such folder" in usage_error(importers_main, argv, capsys)
    assert out.read_bytes() == before and not (tmp_path / "outdir").exists()


def test_an_importer_failing_on_its_source_keeps_the_old_output(tmp_path: Path, files, capsys) -> None:
    out = files["good"]
    before = out.read_bytes()
    src = tmp_path / "rb"
    src.mkdir()
    (src / "x.csv").write_text("a,b\n1,2\n")  # not a *_train.csv / *_test.csv: the importer refuses it
    assert importers_main(["routerbench", "--src", str(src), "--out", str(out)]) == 2
    assert "error:" in capsys.readouterr().err
    assert out.read_bytes() == before
