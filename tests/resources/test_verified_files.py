"""resources.verified_files: written with a recorded sha256, loaded only when it still matches."""

from __future__ import annotations

import json
import pickle

import pytest

from resources.verified_files import UnverifiedFileError, load_verified, write_verified


def _write(tmp_path, obj):
    path, side = tmp_path / "m" / "f.pkl", tmp_path / "m" / "f.json"
    sha = write_verified(path, lambda fh: pickle.dump(obj, fh))
    write_verified(side, lambda fh: fh.write(json.dumps({"sha256": sha}).encode()))
    return path, side


def test_a_file_written_verified_loads_back_and_is_0644_without_temp_files(tmp_path):
    path, side = _write(tmp_path, {"w": [1.5, 2.5]})
    assert load_verified(path, side, pickle.load) == {"w": [1.5, 2.5]}
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json", "f.pkl"]


def test_one_changed_byte_is_refused_before_load_is_called(tmp_path):
    path, side = _write(tmp_path, {"w": [1.5, 2.5]})
    data = bytearray(path.read_bytes())
    data[-3] ^= 1
    path.write_bytes(bytes(data))
    called = []
    with pytest.raises(UnverifiedFileError) as err:
        load_verified(path, side, called.append, rebuild="rebuild it (make f)")
    assert str(err.value) == (f"{path}: sha256 does not match the one recorded when it was written ({side}); "
                              "not loaded: rebuild it (make f)")
    assert called == []


def test_a_group_writable_file_of_a_shared_folder_still_loads(tmp_path):
    """Only world-writable is refused: umask 002 makes group-writable files in shared folders."""
    path, side = _write(tmp_path, 7)
    path.chmod(0o664)
    assert load_verified(path, side, pickle.load) == 7
