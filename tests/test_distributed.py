"""Data-parallel training on the CPU with the gloo backend: two processes under torchrun."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

WORKER = str(Path(__file__).with_name("dist_worker.py"))


def _torchrun(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_parameters_stay_bit_identical_across_ranks(tmp_path: Path) -> None:
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, "train", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    a, b = (torch.load(tmp_path / f"params{r}.pt") for r in (0, 1))
    for name, tensor in a.items():
        assert torch.equal(tensor, b[name]), name


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_nccl_collectives_inside_the_trainer_graphs(tmp_path: Path) -> None:
    """Two GPUs, NCCL: the rollout and update graphs hold the normalizer, KL, gradient and skip
    all-reduces. Replayed, they keep the ranks bit-identical and compute what eager training does."""
    runs = {}
    for mode in ("train", "train-eager"):
        out = tmp_path / mode
        out.mkdir()
        run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, mode, str(out), "cuda")
        assert run.returncode == 0, run.stderr[-3000:]
        runs[mode] = [torch.load(out / f"params{r}.pt") for r in (0, 1)]
    for name, tensor in runs["train"][0].items():
        assert torch.equal(tensor, runs["train"][1][name]), name
        torch.testing.assert_close(tensor, runs["train-eager"][0][name], atol=1e-5, rtol=1e-5, msg=name)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_a_two_gpu_train_command_exits_after_training(tmp_path: Path) -> None:
    """The NCCL group is destroyed after graphs captured its collectives: that used to hang."""
    train = ["--standalone", "--nproc_per_node", "2", "-m", "phalanx", "train", "cartpole", "--distributed"]
    run = _torchrun(*train, "--num-envs", "512", "--max-iterations", "5", "--run-dir", str(tmp_path), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 5


def test_averaged_gradients_equal_the_single_process_gradient(tmp_path: Path) -> None:
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, "grads", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    single = torch.load(tmp_path / "grads_single.pt")
    for rank in (0, 1):
        for grad, expected in zip(torch.load(tmp_path / f"grads{rank}.pt"), single, strict=True):
            torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-6)
        assert torch.equal(torch.load(tmp_path / f"extra{rank}.pt"), torch.tensor([0.5, 1.0]))  # rides along


def test_two_nodes_on_localhost(tmp_path: Path) -> None:
    """Two torchrun invocations, node ranks 0 and 1, one process each, c10d rendezvous."""
    port = _free_port()
    train = ["-m", "phalanx", "train", "cartpole", "--distributed", "--device", "cpu", "--num-envs", "16"]
    train += ["--num-steps-per-env", "8", "--max-iterations", "3", "--run-dir", str(tmp_path)]
    nodes = [
        subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", str(rank),
             "--nproc_per_node", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}",
             "--rdzv_id", "phalanx-test", *train],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]  # fmt: skip
    outputs = [node.communicate(timeout=600) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and rows[-1]["frames"] == 3 * 8 * 16 * 2, "frames count both nodes"


def test_a_dead_rank_stops_the_others_within_the_bound(tmp_path: Path) -> None:
    start = time.time()
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, "die", str(tmp_path), timeout=300)
    elapsed = time.time() - start
    assert run.returncode != 0
    assert elapsed < 60, f"took {elapsed:.0f} s"
    assert "exitcode" in run.stderr and "rank" in run.stderr and "3" in run.stderr  # torchrun names the failure
    assert not (tmp_path / "params0.pt").exists()


def test_a_hung_rank_is_named_and_the_job_stops_within_the_bound(tmp_path: Path) -> None:
    """Rank 1 sleeps before its second iteration; rank 0 waits in a collective. The stall
    watchdog (5 s here) names rank 1 well before the collectives' own 60 s timeout."""
    start = time.time()
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, "hang", str(tmp_path), timeout=300)
    elapsed = time.time() - start
    assert run.returncode != 0
    assert elapsed < 45, f"took {elapsed:.0f} s"
    assert "rank(s) 1 stopped behind the others" in run.stderr, run.stderr[-3000:]


def test_gpus_flag_launches_torchrun(tmp_path: Path) -> None:
    """`--gpus 2` starts a standalone torchrun job of two ranks (on the CPU here, with gloo)."""
    run = subprocess.run(
        [sys.executable, "-m", "phalanx", "train", "cartpole", "--gpus", "2", "--device", "cpu", "--num-envs", "16",
         "--num-steps-per-env", "8", "--max-iterations", "2", "--run-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ranks, 16 envs each" in run.stdout
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["frames"] == 2 * 8 * 16 * 2


def test_resume_last_continues_a_restarted_job(tmp_path: Path) -> None:
    """What torchrun --max-restarts does after a failure: the same command again. With
    `--resume last` the first start begins fresh and a restart continues from the last checkpoint."""
    train = ["--standalone", "--nproc_per_node", "2", "-m", "phalanx", "train", "cartpole", "--distributed"]
    train += ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8", "--save-interval", "1"]
    train += ["--run-dir", str(tmp_path), "--resume", "last"]
    first = _torchrun(*train, "--max-iterations", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    second = _torchrun(*train, "--max-iterations", "4")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resumed from" in second.stdout and "at iteration 2" in second.stdout
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3]
