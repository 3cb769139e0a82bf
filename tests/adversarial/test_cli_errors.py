"""The CLI's failure path, as a user meets it: each row is one command in a
real process, with bad input or a broken environment, and the exact line it must print
first (after the runtime line and the command's own status line) with its exit code: 2 when
the user's input caused it, 1 for the environment (disk full, read-only), naming the path.
Dagster's events never reach the console unless `--verbose`.

A full disk is a real one: a tiny tmpfs mounted in a private mount namespace
(`unshare -m`, root in this sandbox), filled before the command starts."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

RAW = "date,open,high,low,close,volume\n"


def _can_mount() -> bool:
    try:
        return subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_mount = pytest.mark.skipif(not _can_mount(), reason="needs `unshare -m` and tmpfs mounts (root)")


def _full_disk(folder: Path) -> str:
    """Shell that mounts a 64 KiB tmpfs on `folder` and fills it to the last block."""
    f = shlex.quote(str(folder))
    return f"mkdir -p {f} && mount -t tmpfs -o size=64k tmpfs {f} && (dd if=/dev/zero of={f}/fill bs=4k 2>/dev/null; true) && "


def _read_only(folder: Path) -> str:
    f = shlex.quote(str(folder))
    return f"mount --bind {f} {f} && mount -o remount,bind,ro {f} && "


def cli(tmp_path: Path, argv: list[str], setup: str = "") -> subprocess.CompletedProcess:
    """`python -m pipeline.cli argv` as a real process (in its own mount namespace when
    `setup` mounts something), with tmp_path's settings and DAGSTER_HOME."""
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "conf" / "settings.yaml"),
           "DAGSTER_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "pipeline.cli", *argv])
    args = ["unshare", "-m", "sh", "-c", setup + "exec " + command] if setup else ["sh", "-c", command]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)


def settings(tmp_path: Path, **extra) -> Path:
    """Settings in tmp_path/conf with absolute data/reports/models paths under tmp_path."""
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    data = {"paths": {k: str(tmp_path / k) for k in ("data", "reports", "models")},
            "years": {"start": 2001, "end": 2001},
            "universe": {"source": "synthetic", "synthetic": {"symbols": ["AAA"], "seed": 3, "end_date": "2001-12-31"}},
            **extra}
    path = conf / "settings.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def user_lines(stderr: str) -> list[str]:
    """stderr without the runtime line and the command's status line (`build-features: ...`)."""
    return [line for line in stderr.strip().splitlines()
            if not line.startswith(("tradelab: device ", "build-features: "))]


def _duplicate_date(tmp_path: Path) -> str:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "AAA.csv").write_text(RAW + "2001-01-02,10,11,9,10,100\n2001-01-02,10,11,9,10,100\n2001-01-03,10,11,9,10,100\n")
    return ""


def _data_disk_full(tmp_path: Path) -> str:
    return _full_disk(tmp_path / "data")


def _dagster_home_disk_full(tmp_path: Path) -> str:
    return _full_disk(tmp_path / "home")


def _used_dagster_home_disk_full(tmp_path: Path) -> str:
    """DAGSTER_HOME on a 2 MiB tmpfs, its storages created by a first command, then filled."""
    home = shlex.quote(str(tmp_path / "home"))
    return (f"mkdir -p {home} && mount -t tmpfs -o size=2m tmpfs {home} && "
            f"{shlex.quote(sys.executable)} -m pipeline.cli symbols list >/dev/null 2>&1 && "
            f"(dd if=/dev/zero of={home}/fill bs=4k 2>/dev/null; true) && ")


# (id, setup(tmp_path) -> shell prefix, argv, the exact first line ({tmp} is tmp_path), exit code)
CLI_FAILURES = [
    ("duplicate_date_in_the_raw_folder", _duplicate_date, ["build-features", "--raw", "{tmp}/raw"],
     "error: {tmp}/raw/AAA.csv: column 'date', row 1: duplicate date 2001-01-02 00:00:00 on rows [1, 2]; "
     "expected one row per date", 2),
    ("data_dir_on_a_full_disk", _data_disk_full, ["build-features"],
     "error: {tmp}/data/raw_bars: disk full (raw_bars: [Errno 28] Error writing bytes to file. "
     "Detail: [errno 28] No space left on device)", 1),
    ("dagster_home_on_a_full_disk", _dagster_home_disk_full, ["build-features"],
     "error: {tmp}/home: disk full: DAGSTER_HOME, the Dagster instance's storage, cannot be written "
     "([Errno 28] No space left on device)", 1),
    ("used_dagster_home_on_a_full_disk", _used_dagster_home_disk_full, ["build-features"],
     "error: {tmp}/home: disk full: DAGSTER_HOME, the Dagster instance's storage, cannot be written "
     "(disk I/O error)", 1),
]


@needs_mount
@pytest.mark.parametrize("setup, argv, line, code", [r[1:] for r in CLI_FAILURES], ids=[r[0] for r in CLI_FAILURES])
def test_a_failed_command_prints_its_one_line_first_and_no_dagster_events(tmp_path, setup, argv, line, code):
    settings(tmp_path)
    prefix = setup(tmp_path)
    out = cli(tmp_path, [a.format(tmp=tmp_path) for a in argv], prefix)
    err = user_lines(out.stderr)
    assert (out.returncode, err[0]) == (code, line.format(tmp=tmp_path)), out.stderr[-3000:]
    assert not any(" - dagster - " in e or "Traceback" in e for e in err), out.stderr[-3000:]
    assert len(err) <= 3  # the line, where the run's log is, where other raw output went


def test_a_failed_run_with_verbose_shows_dagster_events_and_still_ends_in_the_line(tmp_path):
    settings(tmp_path)
    _duplicate_date(tmp_path)
    out = cli(tmp_path, ["build-features", "--raw", str(tmp_path / "raw"), "--verbose"])
    assert out.returncode == 2
    assert " - dagster - ERROR - " in out.stderr and "STEP_FAILURE" in out.stderr
    assert re.search(r"^error: .*/raw/AAA\.csv: column 'date', row 1: duplicate date", out.stderr, re.M)


@needs_mount
def test_a_read_only_settings_folder_with_a_flag_runs(tmp_path):
    """Flags become derived settings; they are the invocation's own, not a file beside the
    settings: a read-only settings folder (a read-only bind mount, which root respects too)
    works, and nothing is written there."""
    cfg = settings(tmp_path)
    before = sorted(p.name for p in cfg.parent.iterdir())
    out = cli(tmp_path, ["build-features", "--workers", "1"], _read_only(cfg.parent))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "raw_bars" in out.stdout and sorted(p.name for p in cfg.parent.iterdir()) == before


@needs_mount
def test_a_full_disk_on_a_rebuild_exits_1_and_keeps_what_was_stored(tmp_path):
    """Build on a small tmpfs, fill it, build again: the second build fails with the line and
    exit code 1, and the tables of the first are still there, whole."""
    settings(tmp_path)
    data, py = shlex.quote(str(tmp_path / "data")), shlex.quote(sys.executable)
    count = shlex.quote(f"from resources.delta_store import DeltaStore; s = DeltaStore({str(tmp_path / 'data')!r}); "
                        "print('rows', s.read('raw_bars').height, s.read('features').height)")
    script = (f"mkdir -p {data} && mount -t tmpfs -o size=4m tmpfs {data} && "
              f"{py} -m pipeline.cli build-features >/dev/null 2>&1 && {py} -c {count} && "
              f"(dd if=/dev/zero of={data}/fill bs=4k 2>/dev/null; true) && "
              f"{{ {py} -m pipeline.cli build-features; echo exit $?; }} && {py} -c {count}")
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "conf" / "settings.yaml"), "DAGSTER_HOME": str(tmp_path / "home")}
    out = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)
    rows = [line for line in out.stdout.splitlines() if line.startswith("rows ")]
    assert len(rows) == 2 and rows[0] == rows[1] and rows[0] != "rows 0 0", out.stdout + out.stderr[-3000:]
    assert "exit 1" in out.stdout.splitlines()
    assert user_lines(out.stderr)[0].startswith(f"error: {tmp_path}/data/raw_bars: disk full (raw_bars: "), out.stderr[-3000:]


def test_train_meta_on_a_universe_that_only_rose_warns_once_per_skipped_horizon_and_finishes(tmp_path):
    """A horizon with one label class, as the user sees it: h7 and h14 only rose, so their meta models are
    skipped, each with one `warning:` line naming the stage, year and horizon; h3 is trained."""
    from tests.assets.test_one_class_horizon import _rising_folder

    _rising_folder(tmp_path / "rising")
    settings(tmp_path, years={"start": 2000, "end": 2003},
             universe={"source": "folder", "folder": {"path": str(tmp_path / "rising")}})
    assert cli(tmp_path, ["build-features"]).returncode == 0
    out = cli(tmp_path, ["train-meta", "--years", "2003"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert [line for line in user_lines(out.stderr) if line.startswith("warning:") and "check" not in line] == [
        "warning: meta_model 2003 h7: the label has one class (all 1) in the training years; horizon skipped",
        "warning: meta_model 2003 h14: the label has one class (all 1) in the training years; horizon skipped"]
    # a market that only rose has one regime: its check fails, and the command says so
    assert "warning: check regime/not_degenerate failed: shares: bull 1" in user_lines(out.stderr)
    assert [line.split(":")[0] for line in out.stdout.splitlines() if line.startswith("meta ")] == ["meta h3 2003"]


def test_grid_search_backend_is_device_with_one_deprecation_line(tmp_path):
    """The old `grid-search --backend` (now --device) still runs, with one `warning:` line
    naming --device; given with a different --device it is one `error:` line, exit 2."""
    settings(tmp_path)
    gd = tmp_path / "gd"
    assert cli(tmp_path, ["grid-data", "--out", str(gd), "--days", "2", "--trades-per-day", "30"]).returncode == 0
    direct = ["grid-search", "--market-data", str(gd / "market_data"), "--trade-log", str(gd / "all_trade_logs.csv"),
              "--engine", "brute", "--quiet", "--out", str(tmp_path / "top.json")]
    out = cli(tmp_path, [*direct, "--backend", "cpu"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert [x for x in out.stderr.splitlines() if "deprecat" in x.lower() or x.startswith("warning:")] == [
        "warning: grid-search --backend is deprecated since 2026-11-24; use grid-search --device"]
    assert (tmp_path / "top.json").is_file()
    both = cli(tmp_path, [*direct, "--backend", "cpu", "--device", "cuda"])
    assert (both.returncode, user_lines(both.stderr)) == (2, [
        "error: --backend cpu and --device cuda: both given; expected --device alone (--backend is its old name)"])
