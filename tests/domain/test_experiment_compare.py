"""domain.experiment_compare: what differs between experiments, printed before their figures,
and the warning on a figure whose experiments stand on different rows. The report folders
are written by hand, as the stages write them."""

from __future__ import annotations

import json
from pathlib import Path

from config.experiments import MANIFEST


def _write(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload))


CODE = {"features": "d4a2b36de4f627df", "specialists": "ea47f5cacdfbaee0", "plugins": {}}


def _experiment(root: Path, name: str, *, symbols: int, years: list[int], h7_rows: int, auc: float,
                settings: dict | None = None, code: dict | None = None, backtest: dict | None = None,
                h7_coverage: dict | None = None) -> None:
    """reports/<name>/: its manifest, evaluation/overall.json (h7) and backtest/overall.json."""
    _write(root / name / MANIFEST, {"experiment": name, "settings_hash": f"{name}-hash", "created_at": "2026-11-27T16:00:00Z",
                                    "settings": settings or {"meta": {"model": "logistic"}},
                                    "code_versions": code or CODE})
    h7 = {"auc": auc, "n": h7_rows, "rank_ic": 0.02}
    if h7_coverage is not None:
        h7["coverage"] = h7_coverage
    _write(root / name / "evaluation" / "overall.json", {"scope": "overall", "rows": h7_rows, "symbols": symbols,
                                                          "years": years, "h7": h7})
    _write(root / name / "backtest" / "overall.json", {"from": f"{years[0]}-01-02", "to": f"{years[-1]}-12-31",
                                                        "symbols": symbols, "sharpe": 0.8,
                                                        "settings": backtest or {"threshold": 0.5, "chunk_days": 256}})


def test_compare_prints_the_coverage_settings_and_code_that_differ_then_warns_on_the_lines_of_far_apart_rows(tmp_path):
    from domain.experiment_compare import compare, format_table

    _experiment(tmp_path, "base", symbols=20, years=[2001, 2002, 2003], h7_rows=25_300, auc=0.55)
    _experiment(tmp_path, "alt", symbols=4, years=[2003], h7_rows=3_509, auc=0.61,
                settings={"meta": {"model": "hist_gbm"}, "backtest": {"threshold": 0.55}},
                code={**CODE, "features": "0123456789abcdef"})
    result = compare(tmp_path, ["base", "alt"])
    text = format_table(result)
    before_figures = text.split("figure ")[0]
    assert "  coverage  evaluation symbols: base 20, alt 4" in before_figures
    assert "  coverage  evaluation years: base 2001..2003 (3), alt 2003" in before_figures
    assert "  coverage  backtest span: base 2001-01-02..2003-12-31, alt 2003-01-02..2003-12-31  !" in before_figures
    assert "  coverage  h7 rows: base 25,300, alt 3,509  !" in before_figures
    assert '  settings  alt: backtest.threshold default -> 0.55' in before_figures
    assert '  settings  alt: meta.model "logistic" -> "hist_gbm"' in before_figures
    assert '  code      alt: features "d4a2b36de4f627df" -> "0123456789abcdef"' in before_figures
    auc_line = next(x for x in text.splitlines() if x.startswith("h7 pooled auc"))
    assert auc_line.endswith("  ! rows differ 25,300 vs 3,509")
    assert next(x for x in text.splitlines() if x.startswith("backtest sharpe")).endswith("! symbols differ 20 vs 4")
    assert "! the experiments' rows (backtest: symbols or days) differ by more than 5%" in text
    # the same in the JSON
    assert result["differences"]["settings"]["alt"] == ['backtest.threshold default -> 0.55',
                                                        'meta.model "logistic" -> "hist_gbm"']
    rows_item = next(i for i in result["differences"]["coverage"] if i["item"] == "h7 rows")
    assert rows_item == {"item": "h7 rows", "values": {"base": 25_300, "alt": 3_509}, "warn": True}
    assert next(r for r in result["rows"] if r["figure"] == "h7 auc")["warning"] == "! rows differ 25,300 vs 3,509"
    assert result["coverage"]["alt"]["h7"] == {"rows": 3_509}


def test_rows_within_five_percent_are_listed_without_a_warning_and_the_same_experiments_show_none(tmp_path):
    from domain.experiment_compare import compare, format_table

    _experiment(tmp_path, "base", symbols=20, years=[2001, 2002], h7_rows=10_000, auc=0.55)
    _experiment(tmp_path, "near", symbols=20, years=[2001, 2002], h7_rows=9_500, auc=0.56)  # 5.0% apart: no warning
    _experiment(tmp_path, "same", symbols=20, years=[2001, 2002], h7_rows=10_000, auc=0.57)
    text = format_table(compare(tmp_path, ["base", "near"]))
    assert "  coverage  h7 rows: base 10,000, near 9,500\n" in text
    assert "!" not in text
    assert "differences from base (anything that can move a figure):\n  none: the same coverage, settings and code " \
           "versions" in format_table(compare(tmp_path, ["base", "same"]))


def test_the_per_horizon_coverage_is_read_where_the_report_has_it_and_a_backtest_setting_from_the_report(tmp_path):
    """An experiment frozen before the backtest entered the hash: its manifest does not name
    the threshold, its backtest report does."""
    from domain.experiment_compare import compare, format_table

    left_out = {"warm_up": 300, "missing_label": 200}
    _experiment(tmp_path, "base", symbols=20, years=[2001], h7_rows=9_999, auc=0.55,
                h7_coverage={"rows_used": 9_000, "rows_available": 9_500, "symbols_used": 19, "symbols_available": 20,
                             "left_out": left_out})
    _experiment(tmp_path, "alt", symbols=20, years=[2001], h7_rows=9_999, auc=0.55,
                h7_coverage={"rows_used": 8_000, "rows_available": 9_500, "symbols_used": 18, "symbols_available": 20,
                             "left_out": {"warm_up": 300, "missing_label": 1_200}},
                backtest={"threshold": 0.6, "chunk_days": 64})
    result = compare(tmp_path, ["base", "alt"])
    assert result["coverage"]["base"]["h7"] == {"rows": 9_000, "rows_available": 9_500, "symbols": 19,
                                                "symbols_available": 20, "left_out": left_out}
    text = format_table(result)
    assert "  coverage  h7 rows: base 9,000, alt 8,000  !" in text
    assert "  coverage  h7 symbols: base 19, alt 18  !\n" in text  # 1 of 19: more than 5%
    assert '  coverage  h7 left out: base {"missing_label": 200, "warm_up": 300}, alt {"missing_label": 1200, ' \
           '"warm_up": 300}' in text
    assert "  settings  alt: backtest.threshold 0.5 -> 0.6 (backtest report)" in text  # chunk_days: no figure
    assert "chunk_days" not in text


def test_an_experiment_frozen_before_code_versions_were_recorded_says_so(tmp_path):
    from domain.experiment_compare import compare

    _experiment(tmp_path, "base", symbols=5, years=[2001], h7_rows=100, auc=0.5)
    _experiment(tmp_path, "old", symbols=5, years=[2001], h7_rows=100, auc=0.5)
    manifest = json.loads((tmp_path / "old" / MANIFEST).read_text())
    del manifest["code_versions"]
    _write(tmp_path / "old" / MANIFEST, manifest)
    assert compare(tmp_path, ["base", "old"])["differences"]["code_versions"] == {
        "old": ["not recorded for old (frozen before code versions were recorded)"]}
