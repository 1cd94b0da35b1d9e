"""A full disk is one line naming the directory, and the files written before stay intact."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest
import torch

from phalanx.cli import main
from phalanx.core.files import temp_files
from phalanx.training.checkpoint import load_checkpoint

TRAIN = ["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]


def torn_save(error: Exception):
    def save(state, path) -> None:
        Path(path).write_bytes(b"PK" + b"\0" * 100)  # part of a checkpoint, then the disk is full
        raise error

    return save


@pytest.mark.parametrize(
    "error",
    [OSError(errno.ENOSPC, "No space left on device"), RuntimeError("[enforce fail] unexpected pos 40512 vs 40404")],
    ids=["enospc", "torch-unexpected-pos"],
)
def test_a_full_disk_while_saving_is_one_line_and_keeps_the_last_checkpoint(
    error: Exception, tmp_path: Path, monkeypatch, capsys
) -> None:
    run = tmp_path / "run"
    assert main([*TRAIN, "--max-iterations", "1", "--run-dir", str(run)]) == 0
    checkpoint = run / "checkpoints" / "model_last.pt"
    before = checkpoint.read_bytes()
    capsys.readouterr()
    monkeypatch.setattr(torch, "save", torn_save(error))
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=0))
    assert main([*TRAIN, "--max-iterations", "2", "--run-dir", str(run), "--resume", "last"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"no space left on {run / 'checkpoints'} to write model_last.pt" in err
    assert checkpoint.read_bytes() == before and not temp_files(checkpoint.parent)
    assert load_checkpoint(checkpoint, "cartpole")["config"]["max_iterations"] == 1


def test_a_failed_write_on_a_disk_with_room_keeps_its_error(tmp_path: Path, monkeypatch) -> None:
    from phalanx.core.files import atomic_path

    with pytest.raises(RuntimeError, match="something else"), atomic_path(tmp_path / "x.pt") as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("something else")
    assert not temp_files(tmp_path) and not (tmp_path / "x.pt").exists()
