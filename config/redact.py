"""Credentials never reach a file, a report or a log line.

`redact(text)` masks the password of every URL with credentials
(`postgresql://user:secret@host/db` -> `postgresql://user:***@host/db`) and the value of
`password=` / `passwd=` / `pwd=` / `token=` / `secret=` pairs (DSN and query-string style).
`redact_obj` applies it to every string inside dicts, lists and tuples.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]+)(?=@)")
_PAIR = re.compile(r"(?P<head>\b(?:password|passwd|pwd|token|secret)=)(?P<secret>[^&\s;]+)", re.IGNORECASE)


def redact(text: str) -> str:
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _PAIR.sub(lambda m: m.group("head") + MASK, text)


def redact_obj(obj: Any) -> Any:
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_obj(v) for v in obj)
    return obj
