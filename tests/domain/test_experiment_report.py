"""domain.experiment_report: an experiment's headline figures read from its reports, its
importance averaged over years, and its report as one self-contained HTML file."""

from __future__ import annotations

import base64
import re

import pytest

from domain.experiment_report import headline, importance, render_report, report_path, write_report
from tests.experiment_reports import write_experiment


def test_headline_names_the_figures_as_experiments_by_does(tmp_path):
    write_experiment(tmp_path, "trees", auc=0.531, rank_ic=0.0412, sharpe=0.9, cagr=0.08)
    figs = headline(tmp_path, "trees")
    assert figs["h7_auc"] == 0.531 and figs["h7_rank_ic"] == 0.0412 and figs["h7_icir"] == pytest.approx(0.0618)
    assert figs["backtest_sharpe"] == 0.9 and figs["backtest_cagr"] == 0.08
    assert figs["backtest_excess_return"] == pytest.approx(0.03)
    assert (figs["symbols"], figs["years"], figs["h7_rows"]) == (3, 2, 1500)
    assert all(isinstance(v, (int, float)) for v in figs.values())


def test_importance_is_the_mean_share_over_the_years(tmp_path):
    folder = write_experiment(tmp_path, "trees", auc=0.53, rank_ic=0.04, sharpe=0.9, cagr=0.08)
    (folder / "meta_model" / "h7_2012.json").write_text(
        '{"importance": {"kind": "lightgbm split gain", "values": {"spec_atc_score": 0.7, "spec_rsi_score": 0.3}}}')
    imp = importance(folder)
    assert list(imp) == ["h7"] and imp["h7"]["years"] == [2011, 2012]
    assert imp["h7"]["values"] == pytest.approx({"spec_atc_score": 0.5, "spec_rsi_score": 0.4, "regime_bull": 0.1})
    assert list(imp["h7"]["values"]) == ["spec_atc_score", "spec_rsi_score", "regime_bull"]


def test_the_report_is_one_self_contained_html_file_with_every_part(tmp_path):
    write_experiment(tmp_path, "trees", auc=0.53, rank_ic=0.04, sharpe=0.9, cagr=0.08)
    path = write_report(tmp_path, "trees")
    assert path == report_path(tmp_path, "trees") == tmp_path / "trees" / "experiment_summary" / "report.html"
    text = path.read_text()
    for heading in ("Headline figures", "Equity against the benchmark, and drawdown", "Rank IC by year",
                    "Deciles (overall)", "Importance of the meta models' columns"):
        assert f"<h2>{heading}" in text, heading
    assert "beat the benchmark (equal weight of 3 symbols, rebalanced daily) by 3.0%/yr" in text
    assert "<td>h7_rank_ic</td><td>0.0400</td>" in text and "<td>backtest_cagr</td><td>8.0%</td>" in text
    # images: equity, rank IC by year, deciles h7, importance h7; each an inlined PNG
    sources = re.findall(r'<img [^>]*src="([^"]*)"', text)
    assert len(sources) == 4
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1], validate=True).startswith(b"\x89PNG\r\n\x1a\n")
    # nothing outside the file: no script, stylesheet link, URL or other src/href
    outside = re.sub(r'src="data:image/png;base64,[A-Za-z0-9+/=]*"', 'src=""', text)
    assert not re.search(r"<script|<link|<iframe|url\(|https?:|//|href=", outside, re.I)
    assert len(re.findall(r"src=", text)) == 4


def test_missing_parts_are_said_and_an_unknown_experiment_is_one_line(tmp_path):
    folder = write_experiment(tmp_path, "fresh", auc=0.5, rank_ic=0.0, sharpe=0.0, cagr=0.0)
    for p in [*(folder / "backtest").iterdir(), *(folder / "meta_model").iterdir()]:
        p.unlink()
    text = render_report(tmp_path, "fresh")
    assert "no backtest equity curve yet (run backtest)" in text
    assert "no meta model report with an importance (run train-meta)" in text
    assert "backtest_sharpe" not in headline(tmp_path, "fresh")
    with pytest.raises(ValueError, match=r"^report: no experiment 'nope' under .*; expected the name of a run's"):
        render_report(tmp_path, "nope")
