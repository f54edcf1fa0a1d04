"""Values the studio can store.

PostgreSQL's text and jsonb hold neither NUL (U+0000) nor an unpaired UTF-16 surrogate
(JSON's `"\\ud800"`, which Python decodes but cannot encode as UTF-8), and jsonb holds no
NaN or Infinity (which Python's JSON parser accepts, though JSON does not). A value nested
a few hundred levels deep parses, but overflows Python's stack when it is encoded for the
insert. Any of these would fail late, at the insert, as a server error; `check_storable`
finds it up front.
"""

from __future__ import annotations

import math
import re
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MAX_DEPTH = 100


class UnstorableText(ValueError):
    """A value that PostgreSQL cannot store; the message is a sentence for the client."""


def check_storable(data: Any) -> None:
    """Raise UnstorableText if any string in `data` (keys included) holds NUL or a lone surrogate,
    any number is NaN or infinite, or `data` nests deeper than MAX_DEPTH."""
    stack = [(data, 0)]
    while stack:  # not recursive: input may nest as deep as the JSON parser allows
        item, depth = stack.pop()
        if isinstance(item, str):
            found = _UNSTORABLE.search(item)
            if found is None:
                continue
            if found.group() == "\x00":
                raise UnstorableText("The request holds a NUL character (\\u0000) in a string; it cannot be stored.")
            raise UnstorableText("The request holds an unpaired UTF-16 surrogate (such as \\ud800) in a string.")
        if isinstance(item, float) and not math.isfinite(item):
            raise UnstorableText("The request holds NaN or Infinity, which JSON does not allow.")
        if isinstance(item, dict | list | tuple) and depth >= MAX_DEPTH:
            raise UnstorableText(f"The request is nested too deeply (more than {MAX_DEPTH} levels).")
        if isinstance(item, dict):
            stack.extend((key, depth + 1) for key in item)
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((value, depth + 1) for value in item)
