"""Report files the results block meets in a careless user's folder: each row is a
stage, the report file under reports/, its content, and the exact line the block prints for
it. The block never raises (the run it reports on already succeeded), names the file and
what was expected, and leaves the file as it was."""

from __future__ import annotations

import pytest

from config.settings import read_settings
from pipeline.results import results_lines

REPORTS_MET = [
    ("evaluation_report_cut_short", "evaluation", "evaluation/overall.json", '{"scope": "overall", "h3": {"auc": 0.5',
     "evaluation        n/a: {path}: line 1 column 39: Expecting ',' delimiter; expected a JSON report; "
     "`evaluate` rewrites it"),
    ("evaluation_report_empty", "evaluation", "evaluation/overall.json", "",
     "evaluation        n/a: {path}: line 1 column 1: Expecting value; expected a JSON report; `evaluate` rewrites it"),
    ("backtest_report_a_list", "backtest", "backtest/overall.json", "[1, 2]",
     "backtest          n/a: {path}: a JSON list; expected a JSON object (a report); `backtest` rewrites it"),
    ("backtest_figures_as_text", "backtest", "backtest/overall.json",
     '{"horizon": 7, "from": "2003-01-02", "to": "2003-12-31", "symbols": 3, "sharpe": "high", "cagr": null, '
     '"max_drawdown": true, "annual_turnover": 12}',
     "backtest          p_h7 2003-01-02..2003-12-31, 3 symbols: Sharpe n/a, CAGR n/a, max drawdown n/a, turnover 12x/yr"),
    ("meta_report_not_utf8", "meta_model", "meta_model/h3_2003.json", b"\xff\xfe{",
     "meta h3           n/a: {path}: cannot be read ('utf-8' codec can't decode byte 0xff in position 0: invalid start "
     "byte); expected a JSON report; `train-meta` rewrites it"),
]


@pytest.mark.parametrize("stage, rel, content, expected", [r[1:] for r in REPORTS_MET], ids=[r[0] for r in REPORTS_MET])
def test_a_broken_report_is_one_line_naming_the_file_and_is_left_as_it_was(make_settings, stage, rel, content, expected):
    settings = read_settings(make_settings(universe={"source": "folder", "folder": {"path": "raw"}}))
    path = settings.reports_dir / rel
    path.parent.mkdir(parents=True)
    raw = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(raw)
    lines = results_lines(settings, [2003], (stage,))
    assert lines[0] == expected.format(path=path)  # the stage's first line (meta: h3; h7 and h14 have no report)
    assert path.read_bytes() == raw
