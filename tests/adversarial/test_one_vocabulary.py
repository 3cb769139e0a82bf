"""One vocabulary, as a user meets it: a name from another vocabulary (`platt` for the
calibration, `gpu` for a device, a lower-case robustness) is refused in a real process with
the line that names the key or flag and the allowed values (read from the settings model),
exit code 2; nothing runs."""

from __future__ import annotations

import pytest

from tests.adversarial.test_cli_errors import cli, settings

ROWS = [
    ("calibration_platt_in_settings", {"meta": {"calibration": "platt"}}, ["evaluate"],
     "  meta.calibration: Input should be 'isotonic' or 'sigmoid' (got 'platt')", 2),
    ("device_gpu_in_settings", {"device": "gpu"}, ["evaluate"],
     "  device: Input should be 'auto', 'cpu', 'cuda' or 'rocm' (got 'gpu')", 2),
    ("train_lstm_device_gpu_flag", {}, ["train-lstm", "--device", "gpu"],
     "python -m pipeline.cli train-lstm: error: argument --device: invalid choice: 'gpu' "
     "(choose from 'auto', 'cpu', 'cuda', 'rocm')", 2),
    ("atc_scan_robustness_lower_case", {}, ["atc-scan", "--robustness", "wide"],
     "python -m pipeline.cli atc-scan: error: argument --robustness: invalid choice: 'wide' "
     "(choose from 'Narrow', 'Medium', 'Wide')", 2),
]


@pytest.mark.parametrize(("extra", "argv", "line", "code"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_name_of_another_vocabulary_is_refused_with_the_allowed_values(tmp_path, extra, argv, line, code):
    settings(tmp_path, **extra)
    out = cli(tmp_path, argv)
    assert out.returncode == code, out.stderr
    assert line in out.stderr.splitlines(), out.stderr
    assert not (tmp_path / "data").exists()  # nothing ran
