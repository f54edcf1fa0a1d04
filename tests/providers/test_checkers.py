"""Answer checkers on hand-written answers, including the awkward ones."""

from __future__ import annotations

from typing import Any

import pytest

from providers.checkers import (
    CheckResult,
    check,
    check_math,
    checker_for,
    extract_choice,
    extract_final_answer,
    normalize_math,
    parse_calls,
    token_f1,
)

HUMANEVAL_ITEM = {
    "task_id": "HumanEval/53",
    "prompt": 'from typing import List\n\n\ndef add(x: int, y: int) -> int:\n    """Add two numbers."""\n',
    "entry_point": "add",
    "test": "\n\ndef check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
}
MBPP_ITEM = {
    "name": "mbpp_234_volume_cube",
    "prompt": 'def volume_cube(l: int) -> int:\n    """\n\tThe volume of a cube.\n\t"""\n',
    "entry_point": "volume_cube",
    "test": "def check(candidate):\n    assert candidate(3) == 27\n    assert candidate(2) == 8\n\n"
    "def test_check():\n    check(volume_cube)\n\ntest_check()\n",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("6 * 7 = 42.\n#### 42", "42"),
        ("so x = \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
        ("nested \\boxed{\\left( 3, \\frac{\\pi}{2} \\right)} done", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("The answer is 42.", "42"),
        ("Final answer: **$18**", "18"),
        ("Thought: done.\nAction: Finish[Chief of Protocol]", "Chief of Protocol"),
        ("  just this  ", "just this"),
    ],
)
def test_extract_final_answer(text: str, expected: str) -> None:
    assert extract_final_answer(text) == expected


@pytest.mark.parametrize(
    ("answer", "gold", "passed"),
    [
        ("She makes 9 * 2 = $18 every day.\n#### 18", "Janet sells 9 eggs.\n#### 18", True),
        ("The answer is $1,234.50.", "1234.5", True),
        ("The answer is 18.00 dollars", "18", True),
        ("That is 3/4 of the class.", "0.75", True),
        ("\\boxed{\\dfrac{1}{2}}", "0.5", True),
        ("It grows by 50%", "50", True),
        ("answer: -7", "-7", True),
        ("After 3 days she has 17 eggs", "#### 18", False),
        ("I do not know", "5", False),
    ],
)
def test_gsm8k_numbers(answer: str, gold: str, passed: bool) -> None:
    result = check("gsm8k", answer, gold)

    assert (result.passed, result.score) == (passed, 1.0 if passed else 0.0)


def test_gsm8k_says_what_it_expected() -> None:
    assert check("GSM8K", "#### 17", "#### 18").detail == "expected 18, got 17"


@pytest.mark.parametrize(
    ("answer", "gold", "passed"),
    [
        ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
        ("so the answer is $\\dfrac{14}{3}$.", "\\frac{14}{3}", True),
        ("\\boxed{14/3}", "\\frac{14}{3}", True),
        ("\\boxed{\\frac12}", "0.5", True),
        ("\\boxed{10\\%}", "10", True),
        ("\\boxed{x = 5}", "5", True),
        ("\\boxed{90^\\circ}", "90", True),
        ("\\boxed{5 \\text{ cm}}", "5", True),
        ("\\boxed{1,000}", "1000", True),
        ("\\boxed{7.0}", "7", True),
        ("\\boxed{C}", "\\text{(C)}", True),
        ("\\boxed{\\sqrt3}", "\\sqrt{3}", True),
        ("\\boxed{\\frac{14}{5}}", "\\frac{14}{3}", False),
        ("\\boxed{\\sqrt{2}}", "\\sqrt{3}", False),
    ],
)
def test_math_answers(answer: str, gold: str, passed: bool) -> None:
    assert check("MATH-500", answer, gold).passed is passed


def test_math_takes_a_whole_solution_as_gold() -> None:
    assert check_math("\\boxed{3}", "First ... so we get $\\boxed{3}$.").passed


def test_normalize_math_removes_only_presentation() -> None:
    assert normalize_math("\\left( 3, \\dfrac{\\pi}{2} \\right)") == "(3,\\frac{\\pi}{2})"
    assert normalize_math("\\$5.") == "5"


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("(B)", "B"),
        ("The answer is b.", "B"),
        ("Answer: (C)", "C"),
        ("\\boxed{\\text{(D)}}", "D"),
        ("E. Paris is the capital", "E"),
        ("a", "A"),
        ("A cat is not a dog, so the answer is C because of x", "C"),
        ("The correct option is (e)", "E"),
        ("The choice is a hard one", None),
        ("Answer: Paris", None),
    ],
)
def test_extract_choice(answer: str, letter: str | None) -> None:
    assert extract_choice(answer) == letter


def test_multiple_choice_checks_the_letter() -> None:
    assert check("ARC-Challenge", "The answer is b.", "B").passed
    assert check("mmlu", "Answer: (C)", "(B)").detail == "expected B, got C"
    assert check("gpqa", "I cannot tell", "A").detail == "no choice letter in the answer"


def test_humaneval_body_completion_passes() -> None:
    result = check("humaneval", "    return x + y\n", HUMANEVAL_ITEM["test"], item=HUMANEVAL_ITEM)

    assert result == CheckResult(score=1.0, passed=True, detail="all tests passed")


def test_humaneval_full_function_in_a_fence_passes() -> None:
    answer = "Here it is:\n```python\ndef add(x: int, y: int) -> int:\n    return x + y\n```\nDone."

    assert check("humaneval", answer, HUMANEVAL_ITEM["test"], item=HUMANEVAL_ITEM).passed


def test_a_wrong_solution_fails_with_the_failing_assert() -> None:
    result = check("humaneval", "    return x - y\n", HUMANEVAL_ITEM["test"], item=HUMANEVAL_ITEM)

    assert (result.passed, result.score) == (False, 0.0)
    assert result.detail == "a test failed: assert candidate(2, 3) == 5"


def test_exiting_early_does_not_pass_the_tests() -> None:
    result = check("humaneval", "    import sys\n    sys.exit(0)\n", HUMANEVAL_ITEM["test"], item=HUMANEVAL_ITEM)
    at_import = check(
        "humaneval",
        "import os\nos._exit(0)\ndef add(x, y):\n    return 0\n",
        HUMANEVAL_ITEM["test"],
        item=HUMANEVAL_ITEM,
    )

    assert not result.passed
    assert not at_import.passed
    assert at_import.detail == "the program stopped before the tests finished"


def test_a_chatty_solution_still_passes() -> None:
    answer = "    print('debug ' * 10000)\n    return x + y\n"

    assert check("humaneval", answer, HUMANEVAL_ITEM["test"], item=HUMANEVAL_ITEM).passed


def test_a_hanging_solution_fails_on_time() -> None:
    item = {**HUMANEVAL_ITEM, "timeout_s": 1}

    result = check("humaneval", "    while True:\n        pass\n", item["test"], item=item)

    assert not result.passed
    assert "did not finish within 1 s" in result.detail


def test_mbpp_tests_that_call_themselves() -> None:
    good = check("mbpp", "def volume_cube(l):\n    return l ** 3\n", MBPP_ITEM["test"], item=MBPP_ITEM)
    bad = check("mbpp", "def volume_cube(l):\n    return l ** 2\n", MBPP_ITEM["test"], item=MBPP_ITEM)

    assert good.passed
    assert (bad.passed, bad.detail) == (False, "a test failed: assert candidate(3) == 27")


def test_mbpp_with_a_list_of_asserts() -> None:
    tests = ["assert volume_cube(3) == 27", "assert volume_cube(1) == 1"]

    assert check("mbpp", "def volume_cube(l):\n    return l ** 3", tests, item={"entry_point": "volume_cube"}).passed


MAROON = 'spotify.play(artist="Maroon 5", duration=15)'
TAYLOR = 'spotify.play(artist="Taylor Swift", duration=20)'
PARALLEL_GOLD = [
    {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
    {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}},
]


@pytest.mark.parametrize(
    ("answer", "passed", "detail"),
    [
        (f'[{MAROON}, spotify.play(artist="taylor swift", duration=20)]', True, None),
        (
            '[{"name": "spotify.play", "arguments": {"artist": "Taylor Swift", "duration": 20}},'
            ' {"function": {"name": "spotify.play",'
            ' "arguments": "{\\"artist\\": \\"Maroon 5\\", \\"duration\\": 15.0}"}}]',
            True,
            None,
        ),
        (f"```python\n[{MAROON.replace('.', '_')}, {TAYLOR.replace('.', '_')}]\n```", True, None),
        (
            f"[{MAROON.replace('15', '16')}, {TAYLOR}]",
            False,
            "spotify.play: artist='Maroon 5' is not one of ['Taylor Swift']",
        ),
        (MAROON, False, "expected 2 call(s), got 1"),
        ('spotify.play("Maroon 5", 15)', False, "the calls must name every argument (f(x=1), not f(1))"),
        ("I would rather not", False, "no function call could be read from the answer"),
    ],
)
def test_bfcl_parallel_calls(answer: str, passed: bool, detail: str | None) -> None:
    result = check("bfcl_parallel", answer, PARALLEL_GOLD)

    assert result.passed is passed
    if detail:
        assert result.detail == detail


def test_bfcl_optional_and_unexpected_arguments() -> None:
    gold: dict[str, Any] = {
        "id": "simple_python_0",
        "ground_truth": [{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}],
    }

    assert check("bfcl", "calculate_triangle_area(base=10, height=5)", gold).passed
    assert check("bfcl", 'calculate_triangle_area(base=10.0, height=5, unit="units")', gold).passed
    assert not check("bfcl", 'calculate_triangle_area(base=10, height=5, unit="cm")', gold).passed
    assert check("bfcl", "calculate_triangle_area(base=10, height=5, color=1)", gold).detail == (
        "calculate_triangle_area: unexpected argument 'color'"
    )
    assert check("bfcl", "calculate_triangle_area(base=10)", gold).detail == (
        "calculate_triangle_area: missing argument 'height'"
    )


def test_bfcl_dicts_lists_and_booleans() -> None:
    gold = [
        {
            "db.fetch": {
                "conditions": [{"department": ["Science"], "school": ["Bluebird High School", "Bluebird HS"]}],
                "columns": [["name", "age"]],
                "distinct": [True],
            }
        }
    ]
    good = 'db.fetch(conditions={"department": "science", "school": "Bluebird HS"}, columns=["name", "age"], '
    good += "distinct=True)"

    assert check("bfcl", good, gold).passed
    assert not check("bfcl", good.replace("distinct=True", "distinct=1"), gold).passed
    assert not check("bfcl", good.replace('["name", "age"]', '["age", "name"]'), gold).passed


def test_parse_calls_reads_dotted_names() -> None:
    assert parse_calls("[math.hypot(x=4, y=5)]") == [("math.hypot", {"x": 4, "y": 5})]


@pytest.mark.parametrize(
    ("answer", "gold", "score", "passed"),
    [
        ("The answer is Chief of Protocol.", "Chief of Protocol", 1.0, True),
        ("Finish[the Chief of Protocol]", "Chief of Protocol", 1.0, True),
        ("Protocol chief", "Chief of Protocol", 0.8, False),
        ("no", "yes", 0.0, False),
        ("Animorphs series", ["The Animorphs", "Animorphs series"], 1.0, True),
    ],
)
def test_hotpotqa_exact_match_and_f1(answer: str, gold: Any, score: float, passed: bool) -> None:
    result = check("hotpotqa", answer, gold)

    assert result.passed is passed
    assert result.score == pytest.approx(score)


def test_token_f1_ignores_case_articles_and_punctuation() -> None:
    assert token_f1("The Eiffel Tower!", "eiffel tower") == 1.0


def test_unknown_benchmark_is_a_clear_key_error() -> None:
    with pytest.raises(KeyError, match="No answer checker for benchmark 'chess'"):
        checker_for("chess")


def test_missing_gold_fails_without_raising() -> None:
    assert check("gsm8k", "42", None).detail == "there is no gold answer to check against"
