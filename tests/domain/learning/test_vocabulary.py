"""One vocabulary: the calibration names of the settings (`meta.calibration`) are the names
of the calibrators, the cv report and the meta model (no alias map); the LSTM's device names
are the settings' `device` names (auto|cpu|cuda|rocm)."""

from __future__ import annotations

import numpy as np
import pytest

from config.settings import field_choices


def test_the_calibration_names_of_the_settings_are_those_of_every_learning_module():
    from domain.learning import calibration, cv_report, metamodel

    names = set(field_choices("meta", "calibration"))
    assert names == {"isotonic", "sigmoid"}
    assert set(calibration.METHODS) == set(cv_report.METHODS) == set(metamodel.CALIBRATIONS) == names


def test_sigmoid_is_platt_scaling_and_platt_is_not_an_alias():
    from domain.learning.calibration import fit_calibrator

    s = np.linspace(0.0, 100.0, 200)
    y = (s > 50).astype(np.int8)
    cal = fit_calibrator(s, y, "sigmoid")
    assert cal.method == "sigmoid" and type(cal.model).__name__ == "PlattFit"
    with pytest.raises(ValueError, match=r"method must be one of \('sigmoid', 'isotonic'\), got 'platt'"):
        fit_calibrator(s, y, "platt")


def test_train_meta_refuses_the_platt_alias_naming_the_allowed_values():
    from domain.learning.metamodel import train_meta

    X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int8)
    with pytest.raises(ValueError, match=r"^calibration must be one of \('isotonic', 'sigmoid'\), got 'platt'$"):
        train_meta(X, y, calibration="platt")


@pytest.mark.parametrize("device", field_choices("device"))
def test_every_device_setting_names_a_torch_device(device):
    import torch

    from domain.learning.lstm_training import resolve_device

    got = resolve_device(device)
    assert got.type == {"cpu": "cpu", "cuda": "cuda", "rocm": "cuda"}.get(device, "cuda" if torch.cuda.is_available() else "cpu")


def test_the_lstm_refuses_a_device_name_outside_the_settings_vocabulary():
    from domain.learning.lstm_training import resolve_device

    with pytest.raises(ValueError, match=r"^device 'gpu': expected one of auto, cpu, cuda, rocm$"):
        resolve_device("gpu")
