"""GSM8K-style numbers and MATH-style LaTeX answers."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from providers.checkers.extract import extract_final_answer, last_boxed
from providers.checkers.result import CheckResult

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?|-?\.\d+")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")


def check_number(answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult:
    """GSM8K: the final number of the reply equals the gold number (the one after `####`)."""
    expected = _final_number(str(gold))
    if expected is None:
        return CheckResult.of(False, f"the gold answer {gold!r} has no number")
    got = _final_number(answer)
    if got is None:
        return CheckResult.of(False, "no number in the answer")
    if _close(got, expected):
        return CheckResult.of(True, f"{_show(got)} is correct")
    return CheckResult.of(False, f"expected {_show(expected)}, got {_show(got)}")


def check_math(answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult:
    """MATH: the final (boxed) answer equals the gold one after normalizing LaTeX."""
    gold_text = str(gold)
    gold_text = last_boxed(gold_text) or gold_text  # a whole solution also works as gold
    got, expected = normalize_math(extract_final_answer(answer)), normalize_math(gold_text)
    if not got:
        return CheckResult.of(False, "no answer found")
    if math_equal(got, expected):
        return CheckResult.of(True, f"{got} is correct")
    return CheckResult.of(False, f"expected {expected}, got {got}")


def parse_number(text: str) -> Fraction | None:
    """`text` as an exact number when it is one: "1,234", "-2.50", "3/4", "\\frac{3}{4}",
    "$18", "50%" (as 50), "7.0"."""
    cleaned = _TEXT.sub(r"\1", text)
    cleaned = _FRAC.sub(r"(\1)/(\2)", cleaned)
    for junk in ("\\$", "$", "\\%", "%", "\\!", "\\,", "{", "}", " "):
        cleaned = cleaned.replace(junk, "")
    cleaned = re.sub(r"(?<=\d),(?=\d{3}\b)", "", cleaned).rstrip(".")
    match = re.fullmatch(r"\(?(-?[\d.]+)\)?/\(?(-?[\d.]+)\)?", cleaned)
    try:
        if match:
            return Fraction(match.group(1)) / Fraction(match.group(2))
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


def normalize_math(text: str) -> str:
    """A canonical string for a MATH answer (after Hendrycks et al.'s `strip_string`)."""
    s = str(text).strip().replace("\n", "")
    s = s.replace("\\!", "").replace("\\\\", "\\")
    s = re.sub(r"\\[,;:> ]", "", s)  # LaTeX spacing
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")
    if "\\text{ " in s:  # trailing units: "5 \text{ cm}"
        s = s.split("\\text{ ")[0]
    s = _TEXT.sub(r"\1", s)
    s = s.rstrip(".").strip()
    lhs, eq, rhs = s.partition("=")
    if eq and "=" not in rhs and len(lhs.strip()) <= 2:  # "x = 5"
        s = rhs
    s = re.sub(r"\\sqrt(\w)", r"\\sqrt{\1}", s)
    s = s.replace(" ", "")
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\{([^{}]*)\}(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac(\d)\{", r"\\frac{\1}{", s)
    if re.fullmatch(r"-?\d+/\d+", s):
        numerator, denominator = s.split("/")
        s = f"\\frac{{{numerator}}}{{{denominator}}}"
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    s = re.sub(r"^(-?\d+)\.0+$", r"\1", s)
    s = re.sub(r"^(-?)\.(\d)", r"\g<1>0.\2", s)
    if match := re.fullmatch(r"\(([A-Za-z])\)", s):  # "(C)" as in "\text{(C)}"
        s = match.group(1)
    return s


def math_equal(a: str, b: str) -> bool:
    """Equal as normalized strings, or as numbers."""
    if a == b:
        return True
    x, y = parse_number(a), parse_number(b)
    return x is not None and y is not None and _close(x, y)


def _final_number(text: str) -> Fraction | None:
    final = extract_final_answer(text)
    number = parse_number(final)
    if number is not None:
        return number
    found = _NUMBER.findall(_FRAC.sub(r"\1/\2", final))
    return parse_number(found[-1]) if found else None


def _close(a: Fraction, b: Fraction) -> bool:
    return abs(a - b) <= Fraction(1, 10**6) * max(Fraction(1), abs(b))


def _show(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    as_float = float(value)
    return f"{as_float:g}" if Fraction(as_float).limit_denominator(10**6) == value else str(value)
