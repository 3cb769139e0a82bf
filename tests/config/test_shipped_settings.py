"""The shipped settings file (dagster_project.yaml) is one of the three places a setting
could be documented; it documents none: its keys are the settings model's, its values are
the demo's, and the model's descriptions (docs/settings.md, generated) are the only text."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel

from config.settings import Settings, read_settings

SHIPPED = Path(__file__).resolve().parents[2] / "dagster_project.yaml"


def _unknown_keys(data: dict, model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted keys of `data` that are not fields of `model` (nested models walked; a field
    whose value is a mapping of its own, e.g. labels.thresholds, is not)."""
    out = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            out.append(prefix + key)
        elif isinstance(value, dict) and isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out += _unknown_keys(value, field.annotation, f"{prefix}{key}.")
    return out


def test_every_key_of_the_shipped_file_is_a_setting_of_the_model():
    data = yaml.safe_load(SHIPPED.read_text())
    assert data and _unknown_keys(data, Settings) == []
    read_settings(SHIPPED)  # and the values validate


def test_the_walk_names_a_key_the_model_does_not_have():
    assert _unknown_keys({"universe": {"synthetic": {"seeed": 7}}, "atc": {"lam": 0.02}}, Settings) == [
        "universe.synthetic.seeed"]


def test_the_shipped_file_restates_no_description_only_its_header_points_to_the_readme():
    lines = SHIPPED.read_text().splitlines()
    header = 0
    while header < len(lines) and lines[header].startswith("#"):
        header += 1
    assert "docs/settings.md" in " ".join(lines[:header])
    assert [line for line in lines[header:] if "#" in line] == []


def test_the_shipped_file_sets_few_keys_each_a_value_a_demo_needs():
    """A key whose value is the model's default must earn its place: the paths, years and
    source a user edits first; anything else appears only with a value of its own."""
    from config.settings import parse_settings

    data = yaml.safe_load(SHIPPED.read_text())
    assert set(data) <= {"paths", "years", "universe", "device"}
    shipped, default = read_settings(SHIPPED), parse_settings({}, root=SHIPPED.parent)
    assert shipped.universe.synthetic.planted.strength == 0.1 != default.universe.synthetic.planted.strength
