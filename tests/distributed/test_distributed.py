"""Data-parallel training on the CPU with the gloo backend: two processes under torchrun."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from helpers import signal_after_iterations

WORKER = str(Path(__file__).parents[1] / "dist_worker.py")


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


def test_a_student_stays_bit_identical_across_ranks(tmp_path: Path) -> None:
    """Distillation on two ranks: each rank's envs visit their own states, where the teacher
    acts differently, yet the imitation and PPO updates leave both ranks' students equal."""
    from phalanx.cli import main

    teacher = ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8", "--max-iterations", "1"]
    assert main(["train", "cartpole", *teacher, "--logger", "none", "--run-dir", str(tmp_path / "teacher")]) == 0
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, "train", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    a, b = (torch.load(tmp_path / f"params{r}.pt") for r in (0, 1))
    for name, tensor in a.items():
        assert torch.equal(tensor, b[name]), name
    taught = [torch.load(tmp_path / f"taught{r}.pt") for r in (0, 1)]
    assert taught[0].abs().sum() > 0 and not torch.equal(taught[0], taught[1])


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_off_policy_networks_stay_bit_identical_across_ranks(tmp_path: Path, algo: str) -> None:
    """Each rank collects its own envs into its own buffer (their actions differ), yet the
    averaged updates leave the actor, the critics, their targets and the normalizer equal."""
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, algo, str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    a, b = (torch.load(tmp_path / f"params{r}.pt") for r in (0, 1))
    assert not torch.equal(a.pop("buffer_actions"), b.pop("buffer_actions")), "each rank explores on its own"
    for name, tensor in a.items():
        assert torch.equal(tensor, b[name]), name


OFF_POLICY_2_RANKS = [sys.executable, "-m", "phalanx", "train", "cartpole", "--algo", "td3", "--gpus", "2"]
OFF_POLICY_2_RANKS += ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "4", "--logger", "none"]
OFF_POLICY_2_RANKS += ["--algo.batch-size", "64", "--algo.actor-hidden-dims", "16", "--algo.critic-hidden-dims", "16"]
OFF_POLICY_2_RANKS += ["--algo.checkpoint-buffer", "--save-interval", "2"]


def _off_policy_2_ranks(run_dir: Path, *flags: str) -> None:
    run = subprocess.run(
        [*OFF_POLICY_2_RANKS, *flags, "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]


def test_off_policy_on_two_ranks_resumes_exactly(tmp_path: Path) -> None:
    """`phalanx train cartpole --algo td3 --gpus 2` on the CPU: both ranks train and rank 0 writes
    the checkpoint of both ranks' envs; each rank writes its own replay buffer, and 4 iterations
    straight == 2, then --resume last for 2 more."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    _off_policy_2_ranks(straight, "--max-iterations", "4")
    rows = _rows(straight)
    assert len(rows) == 4 and rows[-1]["frames"] == 4 * 4 * 16 * 2, "frames of both ranks"
    _off_policy_2_ranks(split, "--max-iterations", "2")
    _off_policy_2_ranks(split, "--max-iterations", "4", "--resume", "last")
    a, b = (torch.load(run / "checkpoints" / "model_4.pt", weights_only=True) for run in (straight, split))
    assert len(a["ranks"]) == 2
    for key in ("off_policy", "ranks"):
        _assert_equal_states(a[key], b[key], key)
    for rank in (0, 1):
        buffers = [
            torch.load(run / "checkpoints" / f"replay_last.rank{rank}.pt", weights_only=True)
            for run in (straight, split)
        ]
        _assert_equal_states(buffers[0], buffers[1], f"rank {rank}'s buffer")


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


def _two_nodes(
    train: list[str], node_1_flags: list[str], timeout: float = 600
) -> tuple[list[subprocess.Popen], list[tuple[str, str]]]:
    """Two torchrun invocations of `train` on localhost, node ranks 0 and 1 (the second with
    `node_1_flags` too), one process each, c10d rendezvous; once both ended, their (stdout, stderr)."""
    port = _free_port()
    nodes = [
        subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", str(rank),
             "--nproc_per_node", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}",
             "--rdzv_id", "phalanx-test", *train, *(node_1_flags if rank else [])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]  # fmt: skip
    return nodes, [node.communicate(timeout=timeout) for node in nodes]


def test_two_nodes_on_localhost(tmp_path: Path) -> None:
    """Two torchrun invocations, node ranks 0 and 1, one process each, c10d rendezvous."""
    train = ["-m", "phalanx", "train", "cartpole", "--distributed", "--device", "cpu", "--num-envs", "16"]
    train += ["--num-steps-per-env", "8", "--max-iterations", "3", "--run-dir", str(tmp_path)]
    nodes, outputs = _two_nodes(train, [])
    assert [node.returncode for node in nodes] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and rows[-1]["frames"] == 3 * 8 * 16 * 2, "frames count both nodes"


def test_a_node_started_with_other_settings_is_refused_by_name(tmp_path: Path) -> None:
    """Two nodes whose commands differ in one env flag: every rank stops before building its env,
    with one line naming the rank, its host and the flag (and nothing is written)."""
    train = ["-m", "phalanx", "train", "cartpole", "--distributed", "--device", "cpu", "--num-envs", "16"]
    train += ["--max-iterations", "3", "--run-dir", str(tmp_path / "run")]
    nodes, outputs = _two_nodes(train, ["--env.episode-length-s", "4"], timeout=300)
    host = socket.gethostname()
    line = (
        f"phalanx train: error: --distributed: rank 1 (on {host}) was started with --env.episode-length-s 4.0, "
        f"rank 0 (on {host}) with 5.0: every rank must run the same versions and settings"
    )
    for node, (_, err) in zip(nodes, outputs, strict=True):
        assert node.returncode != 0 and line in err.splitlines(), err[-3000:]
    assert not (tmp_path / "run").exists()


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


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _assert_equal_states(a, b, where: str = "") -> None:
    """Bitwise equality of two nested checkpoint states."""
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_equal_states(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_equal_states(x, y, f"{where}/{i}")
    else:
        assert a == b, where


TRAIN_2_RANKS = ["--standalone", "--nproc_per_node", "2", "-m", "phalanx", "train", "cartpole", "--distributed"]
TRAIN_2_RANKS += ["--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8", "--empirical-normalization"]


def test_distributed_resume_is_exact(tmp_path: Path) -> None:
    """2 gloo ranks: 6 iterations straight equal 3, a crash, and 3 more through `--resume last`
    (what torchrun --max-restarts runs): every rank's envs, generators and normalizer, the policy
    and the optimizer, bitwise; metrics.jsonl holds each iteration once."""
    straight, restarted = tmp_path / "straight", tmp_path / "restarted"
    common = [*TRAIN_2_RANKS, "--save-interval", "3"]
    run = _torchrun(*common, "--run-dir", str(straight), "--max-iterations", "6")
    assert run.returncode == 0, run.stderr[-3000:]
    for iterations in (3, 6):
        run = _torchrun(*common, "--run-dir", str(restarted), "--resume", "last", "--max-iterations", str(iterations))
        assert run.returncode == 0, run.stderr[-3000:]
        if iterations == 3:  # the crash: one more iteration logged after the checkpoint, and half a line
            with (restarted / "metrics.jsonl").open("a") as f:
                f.write(json.dumps({**_rows(restarted)[-1], "iteration": 3}) + '\n{"iteration": 4, "fr')
    assert "resumed from" in run.stdout and "at iteration 3" in run.stdout
    assert [r["iteration"] for r in _rows(restarted)] == [0, 1, 2, 3, 4, 5]
    a, b = (torch.load(d / "checkpoints" / "model_6.pt", weights_only=True) for d in (straight, restarted))
    assert len(a["ranks"]) == 2 and not torch.equal(
        a["ranks"][0]["env"]["sim"]["qpos"], a["ranks"][1]["env"]["sim"]["qpos"]
    )
    for key in ("iteration", "frames", "policy", "obs_norm", "critic_norm", "ppo", "ranks"):
        _assert_equal_states(a[key], b[key], key)


def test_sigterm_stops_every_rank_after_the_same_iteration_with_a_checkpoint(tmp_path: Path) -> None:
    """What a scheduler does to `phalanx train --gpus 2`: SIGTERM to torchrun's agent, which
    forwards it to the workers. They finish the iteration, rank 0 saves every rank's state, they
    exit, and the job ends with SIGTERM's status and one line, not torchrun's traceback."""
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--gpus", "2", *TRAIN_2_RANKS[8:]]
    command += ["--max-iterations", "100000", "--run-dir", str(tmp_path)]
    status, out, err = signal_after_iterations(command, tmp_path, signal.SIGTERM)
    assert "interrupted by SIGTERM: saved" in out, err[-3000:]
    assert status == 143 and "torchrun: stopped by SIGTERM" in err and "Traceback" not in err, err[-3000:]
    state = torch.load(tmp_path / "checkpoints" / "model_last.pt", weights_only=True)
    assert state["iteration"] >= 3 and len(_rows(tmp_path)) == state["iteration"]
    steps = [int(rank["env"]["episode"]["step_count"]) for rank in state["ranks"]]
    assert steps == [state["iteration"] * 8] * 2, "both ranks stopped after the same iteration"
    assert not (tmp_path / "run.lock").exists()


def test_a_time_limit_stops_every_rank_after_the_same_iteration(tmp_path: Path) -> None:
    """`--max-time-s` on 2 ranks: their clocks differ a little, so each stops on their mean and
    both stop after the same iteration, which rank 0 saves; the job exits 0."""
    command = [*TRAIN_2_RANKS, "--max-iterations", "100000", "--max-time-s", "0.5", "--run-dir", str(tmp_path)]
    run = _torchrun(*command)
    assert run.returncode == 0 and "--max-time-s 0.5: " in run.stdout, run.stderr[-3000:]
    state = torch.load(tmp_path / "checkpoints" / "model_last.pt", weights_only=True)
    assert state["elapsed_s"] >= 0.5 and len(_rows(tmp_path)) == state["iteration"] < 100000
    steps = [int(rank["env"]["episode"]["step_count"]) for rank in state["ranks"]]
    assert steps == [state["iteration"] * 8] * 2, "both ranks stopped after the same iteration"


def test_ranks_killed_before_they_saved_are_not_reported_as_a_clean_stop(tmp_path: Path) -> None:
    """torchrun kills the ranks that outlive its shutdown grace (1 s here, 600 s under `--gpus`):
    an iteration longer than that is lost, and the job says so instead of claiming a saved stop."""
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--gpus", "2", *TRAIN_2_RANKS[8:10]]
    command += ["--num-envs", "16", "--num-steps-per-env", "3000", "--max-iterations", "100000"]
    command += ["--run-dir", str(tmp_path)]
    env = os.environ | {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "1"}
    status, out, err = signal_after_iterations(command, tmp_path, signal.SIGTERM, iterations=1, env=env)
    assert status == 1 and "had not saved within 1 s and were killed: no checkpoint" in err, err[-3000:]
    assert "Traceback" not in err and not (tmp_path / "checkpoints" / "model_last.pt").exists()


def test_the_gpus_launcher_gives_its_ranks_time_to_save(monkeypatch) -> None:
    from phalanx.dist import launch

    seen = []
    monkeypatch.delenv("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", raising=False)
    monkeypatch.setattr("torch.distributed.run.main", seen.append)
    assert launch.main(["--standalone", "-m", "phalanx"]) == 0
    assert seen == [[f"--shutdown-timeout={launch.SHUTDOWN_GRACE_S}", "--standalone", "-m", "phalanx"]]


@pytest.mark.parametrize(
    ("where", "phase"), [("step", "iteration 0, the first of this process"), ("env", "building the env")]
)
def test_a_rank_stuck_in_start_up_is_named_and_blamed(tmp_path: Path, where: str, phase: str) -> None:
    """Rank 1 hangs in `phalanx train` before its first iteration is done (in its first env step,
    or building its env) while rank 0 waits in a collective. The watchdog, armed from the start,
    names rank 1 and where it is stuck, and torchrun's root cause is rank 1, not the healthy rank."""
    flags = ["cartpole", "--distributed", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]
    flags += ["--startup-timeout-s", "8", "--stall-timeout-s", "5", "--run-dir", str(tmp_path)]
    start = time.time()
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, "cli", f"hang-{where}", "--", *flags, timeout=300)
    elapsed = time.time() - start
    assert run.returncode != 0
    assert elapsed < 60, f"took {elapsed:.0f} s"
    assert f"rank(s) 1 stopped behind the others (rank 1 in '{phase}')" in run.stderr, run.stderr[-3000:]
    # The root cause is rank 1, with its phase: its own report, or its stop on rank 0's verdict
    # ("stopped by rank 0's stall watchdog"), whichever watchdog ran out first.
    root_cause = run.stderr.split("Root Cause")[1].split("Other Failures")[0]
    assert "rank      : 1 " in root_cause and f"'{phase}'" in root_cause, root_cause
    assert "[rank0]: Traceback" not in run.stderr, "the healthy rank reports in one line, not a raw gloo error"


def test_a_slow_checkpoint_write_is_not_a_stall(tmp_path: Path) -> None:
    """Rank 0 takes 8 s to write the checkpoint of iteration 1, longer than the 3 s stall timeout;
    the other rank waits in the checkpoint's slow phase instead of stalling in iteration 2's
    collectives, and the job finishes."""
    flags = ["cartpole", "--distributed", "--device", "cpu", "--num-envs", "16", "--num-steps-per-env", "8"]
    flags += ["--stall-timeout-s", "3", "--save-interval", "1", "--max-iterations", "2", "--run-dir", str(tmp_path)]
    run = _torchrun("--standalone", "--nproc_per_node", "2", WORKER, "cli", "slow-save", "--", *flags, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert torch.load(tmp_path / "checkpoints" / "model_last.pt", weights_only=True)["iteration"] == 2


def test_a_master_addr_that_does_not_resolve_is_one_line_at_once(tmp_path: Path) -> None:
    env = os.environ | {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_PORT": str(_free_port())}
    env["MASTER_ADDR"] = "no-such-host.invalid"
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--distributed", "--device", "cpu"]
    command += ["--num-envs", "8", "--max-iterations", "1", "--run-dir", str(tmp_path / "run")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stderr.splitlines() if "Warp CUDA warning" not in line]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert "MASTER_ADDR 'no-such-host.invalid' does not resolve" in lines[0]


@pytest.mark.parametrize("rank", ["0", "1"])
def test_a_rank_that_cannot_join_is_one_line_within_the_timeout(tmp_path: Path, rank: str) -> None:
    """Rank 1 with nothing at MASTER_ADDR:MASTER_PORT, rank 0 whose other rank never comes: each
    stops within its start-up timeout plus the two stall timeouts (7 s here) with one line."""
    env = os.environ | {"RANK": rank, "LOCAL_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
    env["MASTER_PORT"] = str(_free_port())
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--distributed", "--device", "cpu"]
    command += ["--startup-timeout-s", "5", "--stall-timeout-s", "1", "--run-dir", str(tmp_path / "run")]
    start = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if "Warp CUDA warning" not in line]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert f"--distributed: rank {rank} could not join the job at 127.0.0.1:{env['MASTER_PORT']} within 7 s" in lines[0]
    assert time.monotonic() - start < 7 + 30, "the timeout, and the start of Python and torch"
    assert not (tmp_path / "run").exists()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # the parent's pid
            found.append(int(stat.parent.name))
    return found


def _launch_until_iterations(tmp_path: Path, iterations: int = 3) -> tuple[subprocess.Popen, dict[int, int]]:
    """`phalanx train cartpole --gpus 2` on the CPU, once it has logged `iterations`; its ranks'
    pids by local rank."""
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--gpus", "2", *TRAIN_2_RANKS[8:]]
    command += ["--max-iterations", "100000", "--run-dir", str(tmp_path)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < iterations):
        time.sleep(0.5)
    ranks = {}
    for pid in _children(proc.pid):
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        rank = next(int(item.split(b"=")[1]) for item in environ if item.startswith(b"LOCAL_RANK="))
        ranks[rank] = pid
    assert sorted(ranks) == [0, 1], ranks
    return proc, ranks


def test_sigterm_to_one_rank_is_a_clean_stop_not_a_failure(tmp_path: Path) -> None:
    """A scheduler that signals the training processes rather than torchrun: the rank stops the
    others after the same iteration, rank 0 saves, and the job exits 143 with one line."""
    proc, ranks = _launch_until_iterations(tmp_path)
    os.kill(ranks[1], signal.SIGTERM)  # one rank only
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "a rank was stopped by SIGTERM; its ranks saved" in err, err[-3000:]
    assert "Traceback" not in err and "interrupted by SIGTERM: saved" in out
    state = torch.load(tmp_path / "checkpoints" / "model_last.pt", weights_only=True)
    assert len(_rows(tmp_path)) == state["iteration"]


def test_a_killed_rank_ends_the_job_with_its_name_and_no_claim_of_a_save(tmp_path: Path) -> None:
    """SIGKILL to rank 1: torchrun tells rank 0 to stop, which announces a save, but a save needs
    every rank. Rank 0 says that none was written; the launcher names the killed rank as the root
    cause, without a traceback, and exits 1."""
    proc, ranks = _launch_until_iterations(tmp_path)
    os.kill(ranks[1], signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err, err[-3000:]
    assert "rank 0: lost the other ranks" in err and "no checkpoint was written for this stop" in err, err[-3000:]
    root_cause = err[err.index("Root Cause") :]
    assert "rank      : 1" in root_cause and "SIGKILL" in root_cause, err[-3000:]
    assert "saved" not in out.split("SIGTERM: finishing this iteration")[-1]
    assert not (tmp_path / "checkpoints").exists()


def test_a_rank_running_another_version_is_named() -> None:
    """Rank 1's entry in the job's store says it runs another torch: rank 0 refuses the job
    naming the library and both versions (a store in this process stands for torchrun's)."""
    import json

    from phalanx.core.errors import ConfigError
    from phalanx.dist.context import DistContext

    store = torch.distributed.HashStore()
    started = {"versions": {"phalanx": "0.1.0", "torch": "2.13.0"}, "settings": {"seed": 42}}
    other = {"versions": {"phalanx": "0.1.0", "torch": "2.12.1"}, "settings": {"seed": 42}}
    store.set("started/1", json.dumps({"host": "node-b", "started": other}))
    with pytest.raises(ConfigError) as error:
        DistContext(rank=0, world_size=2, store=store).check_alike(started, lambda path: path)
    assert "rank 1 (on node-b) was started with versions.torch '2.12.1', rank 0 (on " in str(error.value)
    assert str(error.value).endswith("with '2.13.0': every rank must run the same versions and settings")
