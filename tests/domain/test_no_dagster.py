"""The leaf is a leaf: config and domain load without Dagster and read no settings at
import (the Dagster definitions live in resources.partitions; entry points load settings)."""

from __future__ import annotations

import os
import subprocess
import sys

MODULES = ("config.partitions", "config.settings", "domain.features", "domain.regime", "domain.specialists",
           "domain.labels", "domain.raw_bars", "domain.observe")


def test_importing_domain_features_and_the_config_leaf_loads_no_dagster_and_reads_no_settings(tmp_path):
    # a settings file that cannot be read: an import that loads settings fails on it
    code = (f"import sys; import {', '.join(MODULES)}; "
            "print('dagster' in sys.modules, sorted(m for m in sys.modules if m.startswith('dagster'))[:3])")
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "missing.yaml"),
           "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False []"
