"""config.redact masks credentials; its quick checks (is "://" there, is a key there) skip a
pattern only where it cannot match, so the text comes out as the plain regex passes give it."""

from __future__ import annotations

import pytest

from config.redact import _PAIR, _URL_PASSWORD, MASK, redact


def _both_patterns(text: str) -> str:
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _PAIR.sub(lambda m: m.group("head") + MASK, text)


@pytest.mark.parametrize("text,expected", [
    ("postgresql://user:s3cret@db:5432/x", "postgresql://user:***@db:5432/x"),
    ("host=db password=hunter2 port=5432", "host=db password=*** port=5432"),
    ("https://h/?TOKEN=abc&x=1", "https://h/?TOKEN=***&x=1"),
    ("Pwd=x;Secret=y", "Pwd=***;Secret=***"),
    ("pa\u017f\u017fword=x", "pa\u017f\u017fword=***"),  # long s: re.IGNORECASE equates it with s
    ("to\u212aen=x", "to\u212aen=***"),  # Kelvin sign == k under re.IGNORECASE
    ('{"auc": 0.57, "note": "12 of 1224 days left out"}', '{"auc": 0.57, "note": "12 of 1224 days left out"}'),
    ("token: no equals sign", "token: no equals sign"),
    ("a = b, no key", "a = b, no key"),
    ("", ""),
])
def test_redact_masks_exactly_what_the_two_patterns_mask(text, expected):
    assert redact(text) == expected == _both_patterns(text)


def test_a_large_report_of_numbers_comes_out_unchanged():
    text = "\n".join(f'    "ic": {i / 7:.17g},' for i in range(50_000))
    assert redact(text) == text == _both_patterns(text)
