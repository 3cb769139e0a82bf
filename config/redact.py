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


_PAIR_KEYS = ("password", "passwd", "pwd", "token", "secret")


def redact(text: str) -> str:
    """Each pattern runs only where it can match: the URL one needs "://", the pair one a key
    (after str.casefold, which maps every character re.IGNORECASE equates with a key's
    letters, e.g. the long s and the Kelvin sign, to those letters). Scanning a report of a
    few MB of numbers with the regex costs ~0.1 s; the checks cost a few ms."""
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    if "=" in text:
        folded = text.casefold()
        if any(key in folded for key in _PAIR_KEYS):
            text = _PAIR.sub(lambda m: m.group("head") + MASK, text)
    return text


def redact_obj(obj: Any) -> Any:
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_obj(v) for v in obj)
    return obj
