"""What the command-line tools share: argument types, and input checks that fail in one line.

A tool parses its arguments with these types, checks its output paths before the work
starts (`check_output`), and turns `INPUT_ERRORS` into `parser.error`: exit status 2 and
one line naming the file or value, never a stack trace.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any, NoReturn

from orchestrator.configs import ConfigError
from orchestrator.errors import UsageError
from orchestrator.outcomes import OutcomeFormatError, PriceError, read_json_object


class InputError(ValueError):
    """A file or value a tool cannot use; the message names it."""


INPUT_ERRORS = (InputError, ConfigError, OutcomeFormatError, PriceError)


class RaisingParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise UsageError instead of printing and exiting:
    for a caller that reports them itself (the studio's `manage.py evaluate`)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def seed(text: str) -> int:
    """argparse type: a seed torch and numpy both take, 0 .. 2**32 - 1."""
    value = int(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"a seed is from 0 to {2**32 - 1}, not {value}")
    return value


def non_negative(text: str) -> int:
    """argparse type: an int >= 0 (a count where 0 means none, or no limit)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def positive(text: str) -> int:
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def int_list(text: str) -> list[int]:
    """argparse type: comma-separated ints >= 0, e.g. `10,25,50`."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma-separated list of whole numbers, not {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"a comma-separated list of numbers 0 or more, not {text!r}")
    return values


def float_list(text: str) -> list[float]:
    """argparse type: comma-separated finite numbers >= 0, e.g. `0,1,10`."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma-separated list of numbers, not {text!r}") from None
    if not values or min(values) < 0 or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"a comma-separated list of finite numbers 0 or more, not {text!r}")
    return values


def finite(text: str) -> float:
    """argparse type: a finite float (no nan, no inf)."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text}")
    return value


def read_config(path: Path | None, flag: str) -> dict[str, Any] | None:
    """The JSON object in `path` (None without one); InputError naming `flag` and the file."""
    return None if path is None else read_json_object(path, InputError, flag)


def learned_config(path: Path | None) -> dict[str, Any] | None:
    """The JSON object of `--learned-config` (None without one); UsageError names a file that is
    missing or not a JSON object."""
    if path is not None and not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        return read_config(path, "--learned-config")
    except INPUT_ERRORS as exc:
        raise UsageError(str(exc)) from None


def check_output(path: Path | None, flag: str) -> None:
    """Before any work: `path` must be writable as a file (not a folder, not under a file)."""
    if path is None:
        return
    if path.is_dir():
        raise InputError(f"{flag} {path} is a folder; give a file name")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise InputError(f"{flag} {path}: {parent} is a file, not a folder")
