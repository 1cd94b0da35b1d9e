"""GPU-only checks: the captured-graph path gives the same physics as the CPU path."""

from __future__ import annotations

import functools

import pytest
import torch

import phalanx
from phalanx.training.registry import registered_tasks

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("task", list(registered_tasks()))
def test_steps_on_cuda_without_nan(task: str) -> None:
    env = phalanx.make(task, num_envs=256, device="cuda", seed=0, verbose=False)
    assert env.sim._graph is None
    for _ in range(200):
        obs, reward, terminated, truncated, extras = env.step(torch.rand(256, env.action_dim, device="cuda") * 2 - 1)
    assert env.sim._graph is not None, "CUDA stepping must go through the captured graph"
    assert obs["policy"].device.type == "cuda" and reward.device.type == "cuda"
    assert torch.isfinite(obs["policy"]).all() and torch.isfinite(reward).all()


@pytest.mark.parametrize("backend", ["torch", "warp"])
def test_the_qp_solver_runs_in_a_cuda_graph_as_on_the_cpu(backend: str) -> None:
    """The batched QP solver on CUDA (the warp backend: its kernel launched on torch's stream),
    eagerly and then recorded into a torch CUDA graph and replayed, gives the CPU's torch solutions
    (float64) on force-distribution QPs, its warm start carried from solve to solve: to rounding,
    as step sizes adapted to residuals near rounding amplify it (forces of hundreds of N)."""
    from phalanx.control.force_qp import force_distribution_qp
    from phalanx.control.qp import BatchedQP, QPSettings

    g = torch.Generator().manual_seed(0)
    feet = torch.tensor([[0.35, 0.25, -0.5], [0.35, -0.25, -0.5], [-0.35, 0.25, -0.5], [-0.35, -0.25, -0.5]])
    feet = feet.double() + 0.05 * torch.randn(256, 4, 3, generator=g, dtype=torch.float64)
    wrench = torch.randn(256, 6, generator=g, dtype=torch.float64) * 40
    wrench[:, 2] += 50.0 * 9.81
    stance = torch.rand(256, 4, generator=g) < 0.75
    problem = force_distribution_qp(feet, wrench, stance, mu=0.6, f_max=500.0)
    on_cuda = [t.cuda() for t in problem]
    cpu = BatchedQP(256, 12, 20, QPSettings(iterations=30), dtype=torch.float64)
    gpu = BatchedQP(256, 12, 20, QPSettings(iterations=30, backend=backend), dtype=torch.float64, device="cuda")
    expected = [cpu.solve(*problem).x.clone() for _ in range(3)]
    got = [gpu.solve(*on_cuda).x.cpu()]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        solution = gpu.solve(*on_cuda)
    for _ in range(2):
        graph.replay()
        got.append(solution.x.cpu())
    for ours, theirs in zip(got, expected, strict=True):
        assert torch.allclose(ours, theirs, rtol=1e-6, atol=1e-4)  # N; the backends on one CPU: 5e-6
    assert not (solution.primal_infeasible | solution.dual_infeasible).any()


@pytest.mark.parametrize(("task", "compile"), [("cartpole", False), ("cartpole", True), ("anymal-nav", True)])
def test_captured_step_matches_eager_step(task: str, compile: bool) -> None:
    """Same seed, same actions, resets included: the captured whole-step graph (compiled or not;
    for anymal-nav with ten low-level policy steps inside) and eager stepping agree; compiled
    fusion may round differently, hence the tolerance."""
    make = functools.partial(phalanx.make, task, num_envs=64, device="cuda", seed=5, verbose=False)
    envs = [make(capture=True, compile=compile), make(capture=False, compile=False)]
    g = torch.Generator(device="cuda").manual_seed(0)
    tol = {"atol": 1e-3, "rtol": 1e-3} if compile else {"atol": 0.0, "rtol": 0.0}
    dones = 0
    for _ in range(150 if not compile else 45):
        action = torch.rand(64, envs[0].action_dim, device="cuda", generator=g) * 2 - 1
        (obs_c, rew_c, term_c, trunc_c, _), (obs_e, rew_e, term_e, trunc_e, _) = (env.step(action) for env in envs)
        torch.testing.assert_close(obs_c["policy"], obs_e["policy"], **tol)
        torch.testing.assert_close(rew_c, rew_e, **tol)
        assert torch.equal(term_c, term_e) and torch.equal(trunc_c, trunc_e)
        dones += int((term_c | trunc_c).sum())
    assert envs[0].stepper.captured and not envs[1].stepper.captured
    assert dones > 0, "the comparison must cover auto-resets"


def test_anymal_qp_with_the_qp_kernel_steps_in_the_captured_step_as_uncaptured() -> None:
    """The QP kernel launches on torch's stream inside the captured env step, beside the physics'
    own Warp work: captured steps agree with the same compiled step run uncaptured. (A Warp
    wrapper of the stream made for the kernel and then dropped once unregistered the stream from
    Warp, and the physics' capture on it failed: "Warp error: unknown stream".) Both compile: a
    compiled and an eager step of anymal-qp drift apart by 1e-3 after one step already (on a CPU
    too; the QP-driven torques amplify fusion's rounding)."""
    make = functools.partial(phalanx.make, "anymal-qp", num_envs=64, device="cuda", seed=5, verbose=False, compile=True)
    envs = [make(capture=True), make(capture=False)]
    assert envs[0].low_level.controller.body.qp.backend == "warp", "the default on a GPU"
    _steps_alike_captured_and_not(*envs)


def _steps_alike_captured_and_not(captured, uncaptured, tolerance: float = 1e-3) -> None:
    """3 steps of random actions: the captured env's observations and rewards are the uncaptured
    one's to `tolerance`, and it did capture its step."""
    g = torch.Generator(device="cuda").manual_seed(0)
    for _ in range(3):
        action = torch.rand(captured.num_envs, captured.action_dim, device="cuda", generator=g) * 2 - 1
        (obs_c, rew_c, *_), (obs_e, rew_e, *_) = (env.step(action) for env in (captured, uncaptured))
        torch.testing.assert_close(obs_c["policy"], obs_e["policy"], atol=tolerance, rtol=tolerance)
        torch.testing.assert_close(rew_c, rew_e, atol=tolerance, rtol=tolerance)
    assert captured.stepper.captured and not uncaptured.stepper.captured


def test_anymal_qp_over_the_mpc_steps_in_the_captured_step_as_uncaptured() -> None:
    """The centroidal MPC (its QP built and solved by torch ops) inside the captured env step:
    no host read breaks the capture, and captured steps agree with uncaptured ones (eager both) to
    1e-2: cuBLAS may pick other algorithms under capture, and the rounding they differ by grows
    through the MPC's 120-variable solves and the torques on random actions (to 2e-3 in one of
    3392 observations over 3 steps, seen on an H200)."""
    cfg = phalanx.env_cfg("anymal-qp")
    cfg.actions.controller.params["body_controller"] = "mpc"
    make = functools.partial(phalanx.make, cfg, num_envs=64, device="cuda", seed=5, verbose=False, compile=False)
    _steps_alike_captured_and_not(make(capture=True), make(capture=False), tolerance=1e-2)


def test_a_camera_rendering_every_other_step_inside_the_captured_step() -> None:
    """The render sits behind a conditional node of the env's CUDA graph: captured and eager
    stepping see the same images, new ones at even steps only."""
    cfg = phalanx.env_cfg("cartpole-rgb")
    term = cfg.observations["image"]["rgb"]
    term.history, term.params = 1, {**term.params, "every": 2}
    make = functools.partial(phalanx.make, cfg, num_envs=64, device="cuda", seed=3, verbose=False, compile=False)
    envs = [make(capture=True), make(capture=False)]
    g = torch.Generator(device="cuda").manual_seed(0)
    last = envs[0].obs["image"].clone()
    for step in range(1, 12):
        action = torch.rand(64, envs[0].action_dim, device="cuda", generator=g) * 2 - 1
        captured, eager = (env.step(action)[0]["image"] for env in envs)
        assert torch.equal(captured, eager), f"step {step}"
        assert torch.equal(captured, last) == (step % 2 == 1), f"step {step}"
        last = captured.clone()
    assert envs[0].stepper.captured


@pytest.mark.parametrize("capture", [False, True])
def test_training_iteration_never_syncs_the_host(capture: bool) -> None:
    """Rollout and PPO update under torch's sync debug mode "error": any host sync raises."""
    from phalanx.training.registry import train_cfg
    from phalanx.training.timing import IntervalTimer
    from phalanx.training.trainer import Trainer

    for task in ("cartpole", "ant"):
        cfg = train_cfg(task)
        cfg.num_steps_per_env = 8
        cfg.capture_update = cfg.capture_rollout = capture
        env = phalanx.make(task, num_envs=512, device="cuda", verbose=False)
        trainer = Trainer(cfg, env, run_dir=None)
        for _ in range(3):  # compile, warm up and capture
            trainer.iterate()
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            trainer._collect(IntervalTimer(env.device))
            trainer.ppo.update()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert torch.isfinite(trainer.ppo.storage.returns).all()


@pytest.mark.parametrize(("task", "tolerance"), [("cartpole", 1e-5), ("cartpole-rgb", 1e-3)])
def test_captured_training_matches_eager_training(task: str, tolerance: float) -> None:
    """Rollout and update graphs (the rollout's sharing one memory pool) change where the kernels
    are launched from, not what they compute. Convolutions pick their algorithms per call: a
    looser tolerance for the image policy."""
    from phalanx.training.registry import train_cfg
    from phalanx.training.trainer import Trainer

    params = []
    for capture in (True, False):
        cfg = train_cfg(task)
        cfg.capture_update = cfg.capture_rollout = capture
        env = phalanx.make(task, num_envs=256, device="cuda", seed=1, verbose=False)
        trainer = Trainer(cfg, env, run_dir=None)
        for _ in range(4):
            trainer.iterate()
        params.append(torch.cat([p.detach().flatten() for p in trainer.policy.parameters()]))
    torch.testing.assert_close(params[0], params[1], atol=tolerance, rtol=tolerance)


def test_video_frames_render_on_cuda() -> None:
    from phalanx.sim.video import EnvRecorder

    env = phalanx.make("ant", num_envs=4, device="cuda", verbose=False)
    recorder = EnvRecorder(env.sim, width=160, height=120)
    for _ in range(3):
        env.step(torch.zeros(4, env.action_dim, device="cuda"))
        recorder.capture()
    frames = recorder.frames
    assert len(frames) == 3 and frames[0].shape == (120, 160, 3) and frames[-1].std() > 1.0


@pytest.mark.parametrize(("task", "iterations"), [("cartpole", 60), ("ant", 150)])
def test_fast_precision_learns_like_float32(task: str, iterations: int, tmp_path) -> None:
    """TF32 inference and a compiled bfloat16 update (every task's defaults but cartpole's, whose
    update stays eager and float32) change rounding, not learning: over the same iterations on two
    seeds, their mean return is within twice the seed-to-seed spread of plain float32's (or 10 %)."""
    import json

    def final_return(seed: int, fast: bool) -> float:
        run_dir = tmp_path / f"{seed}-{fast}"
        options = dict.fromkeys(("tf32", "bf16_update", "compile_update"), fast)
        phalanx.train(task, max_iterations=iterations, seed=seed, device="cuda", run_dir=str(run_dir), **options)
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        return sum(row["mean_reward"] for row in rows[-10:]) / 10

    fp32 = [final_return(seed, fast=False) for seed in (1, 2)]
    fast = [final_return(seed, fast=True) for seed in (1, 2)]
    mean_fp32, mean_fast = sum(fp32) / 2, sum(fast) / 2
    allowed = max(2 * abs(fp32[0] - fp32[1]), 0.1 * abs(mean_fp32))
    assert abs(mean_fast - mean_fp32) <= allowed, f"{task}: float32 returns {fp32}, fast returns {fast}"


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
@pytest.mark.parametrize("trainer", ["rsl_rl", "rl_games", "skrl"])
def test_a_library_trains_on_two_gpus(trainer: str, tmp_path) -> None:
    """`--trainer X --gpus 2`: a torchrun job of two ranks, one per GPU, whose run directory holds
    every rank's frames and one row per iteration."""
    import json
    import subprocess
    import sys

    pytest.importorskip(trainer)
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--trainer", trainer, "--gpus", "2"]
    command += ["--num-envs", "256", "--max-iterations", "3", "--logger", "none", "--run-dir", str(run_dir)]
    subprocess.run(command, check=True, timeout=600)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = phalanx.train_cfg("cartpole").num_steps_per_env
    assert [row["frames"] for row in rows] == [2 * 256 * steps * i for i in (1, 2, 3)]
    assert all(row["fps_total"] > 0 for row in rows)


_MANY_OPS = """
import logging, sys, torch
from phalanx.core.compiling import compiled
bypassed = []
class Record(logging.Handler):
    def emit(self, record):
        bypassed.append("Cubin path not found" in record.getMessage())
log = logging.getLogger("torch._inductor.runtime.triton_heuristics")
log.setLevel(logging.INFO)
log.addHandler(Record())
def many_ops(x):  # one fused kernel that inductor would name after its 30 ops
    y = torch.sin(x) + torch.cos(x) * torch.exp(x) - torch.log1p(x.abs()) + torch.tanh(x) * torch.sigmoid(x)
    y = torch.atan2(y, x + 2) + torch.sqrt(x.abs()) + torch.clamp(y, -1, 1) * torch.floor(x) - torch.ceil(y)
    y = torch.where(x > 0.5, torch.round(y), torch.reciprocal(x + 3)) + torch.rsqrt(x + 1) - torch.expm1(x)
    y = y + torch.erf(x) + torch.pow(x, 3) + torch.maximum(x, y) - torch.minimum(x, y) + torch.remainder(y, 2)
    y = y * torch.sign(x) + torch.trunc(y) + torch.frac(y) + torch.hypot(x, y) + torch.logaddexp(x, y)
    return torch.nan_to_num(torch.lerp(x, y, 0.3))
fn = compiled(many_ops) if sys.argv[1] == "compiled" else torch.compile(many_ops)
fn(torch.rand(4096, device="cuda"))
torch.cuda.synchronize()
print(sum(bypassed))
"""


@pytest.mark.parametrize("compiler", ["compiled", "torch.compile"])
def test_every_compiled_kernel_launches_from_the_graph_cache(compiler: str, tmp_path) -> None:
    """A kernel that fuses 30 ops: named after them (over Triton's 150-character file names),
    inductor does not find its binary, launches it through Triton and leaves it out of its FX
    graph cache entry, so a warm start compiles it again (`phalanx.core.compiling.SHORT_KERNEL_NAMES`).
    `compiled` names it short; plain torch.compile shows that the kernel is one such, or, where it
    no longer is (torch or Triton changed), skips: the short names may then go."""
    import os
    import subprocess
    import sys

    if not getattr(torch._inductor.config, "use_static_cuda_launcher", False):
        pytest.skip("this torch launches no kernel from inductor's graph cache")
    caches = {"TORCHINDUCTOR_CACHE_DIR": tmp_path / "inductor", "TRITON_CACHE_DIR": tmp_path / "triton"}
    env = os.environ | {name: str(path) for name, path in caches.items()} | {"TORCHINDUCTOR_COMPILE_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", _MANY_OPS, compiler], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    bypassed = int(run.stdout.split()[-1])
    if compiler == "compiled":
        assert bypassed == 0
    elif bypassed == 0:
        pytest.skip("plain torch.compile keeps the long-named kernel in its cache now")


def test_a_captured_student_trains_as_an_eager_one_across_the_phase_switch(tmp_path) -> None:
    """cartpole-rgb distilled from a cartpole policy: the teacher's forward pass and its share of
    the actions inside the rollout graphs, the update captured for distilling, then warmed up and
    captured again for PPO, compute what the eager trainer does, and never sync the host."""
    import io

    from rich.console import Console

    from phalanx.rl.cfg import DistillCfg
    from phalanx.training.registry import env_cfg, term_packages, train_cfg
    from phalanx.training.teacher import load_teacher, with_teacher_observations
    from phalanx.training.timing import IntervalTimer
    from phalanx.training.trainer import Trainer

    run = tmp_path / "teacher"
    quiet = Console(file=io.StringIO())
    phalanx.train("cartpole", device="cuda", num_envs=256, max_iterations=2, run_dir=str(run), console=quiet)
    params = []
    for capture in (True, False):
        cfg = train_cfg("cartpole-rgb")
        cfg.teacher, cfg.distill = str(run), DistillCfg(iterations=2, mix_iterations=1)
        cfg.capture_update = cfg.capture_rollout = capture
        teacher = load_teacher(cfg.teacher, env_cfg("cartpole-rgb"), term_packages())
        student = with_teacher_observations(env_cfg("cartpole-rgb"), teacher)
        env = phalanx.make(student, num_envs=256, device="cuda", seed=1, verbose=False)
        trainer = Trainer(cfg, env, run_dir=None, console=quiet, teacher=teacher)
        for _ in range(5):  # distilling (captured in the second), PPO (warmed up, captured, replayed)
            trainer.iterate()
        params.append(torch.cat([p.detach().flatten() for p in trainer.policy.parameters()]))
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            trainer.ppo.begin_iteration(trainer.iteration)
            trainer._collect(IntervalTimer(env.device))
            trainer.ppo.update()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    torch.testing.assert_close(params[0], params[1], atol=0, rtol=0)


def _off_policy_trainer(algo: str, capture: bool, seed: int = 1):
    """cartpole with a small FastTD3 / FastSAC: 256 envs, a buffer of 64 steps, updates from the
    third step (both kinds of update run eagerly in the first iteration, then are captured)."""
    from phalanx.training.off_policy import OffPolicyTrainer
    from phalanx.training.registry import algo_cfg, train_cfg

    cfg = train_cfg("cartpole")
    cfg.algo = algo_cfg("cartpole", algo)
    cfg.algo.batch_size, cfg.algo.buffer_size, cfg.algo.learning_starts = 1024, 64, 2
    cfg.num_steps_per_env, cfg.bf16_update = 8, False
    cfg.capture_update = cfg.capture_rollout = capture
    env = phalanx.make("cartpole", num_envs=256, device="cuda", seed=seed, verbose=False)
    return OffPolicyTrainer(cfg, env, run_dir=None)


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_a_captured_off_policy_iteration_never_syncs_the_host(algo: str) -> None:
    """Acting, storing, drawing batches from the replay buffer and both kinds of update, each
    replayed from its graph, through a whole iteration under torch's sync debug mode "error":
    any host sync raises."""
    from phalanx.training.timing import IntervalTimer

    trainer = _off_policy_trainer(algo, capture=True)
    for _ in range(2):  # fill, warm up, capture
        trainer.iterate()
    assert set(trainer.learner._graphs._graphs) == {False, True}, "both kinds of update were captured"
    assert {key[0] for key in trainer.graphs._graphs} == {"act", "store"}, "acting and storing were captured"
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        losses = trainer._learn(IntervalTimer(trainer.device), IntervalTimer(trainer.device))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert all(torch.isfinite(value).all() for value in losses.values())


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_captured_off_policy_training_matches_eager_training(algo: str) -> None:
    """The same seed captured and eager (float32) train the same bits: the graphs change where
    acting, storing and the updates are launched from, not what they compute (the critics'
    projection sums in fixed point, whose order does not matter; both runs' optimizers are
    capturable). Any difference would grow under Adam, which steps even tiny gradients by about
    its learning rate: equality is the test that can tell."""
    params = []
    for capture in (True, False):
        trainer = _off_policy_trainer(algo, capture)
        for _ in range(3):
            trainer.iterate()
        assert trainer.learner.capture == capture and bool(trainer.learner._graphs._graphs) == capture
        assert bool(trainer.graphs._graphs) == capture, "acting and storing replay graphs where captured"
        params.append(torch.cat([p.detach().flatten() for p in trainer.learner.actor.parameters()]))
    torch.testing.assert_close(params[0], params[1], atol=0, rtol=0)


@pytest.mark.parametrize("task", ["anymal-flat", "cartpole-rgb"])
def test_a_rollout_watched_by_the_training_page_never_syncs_the_host(task: str) -> None:
    """`--viewer` records each env step's poses, command markers and images into a ring on the
    device: under torch's sync debug mode "error" a captured rollout with the page attached runs."""
    pytest.importorskip("viser")
    from helpers import unused_port
    from phalanx.training.logger import page_status
    from phalanx.training.registry import train_cfg
    from phalanx.training.timing import IntervalTimer
    from phalanx.training.trainer import Trainer
    from phalanx.viewer.training_view import TrainingView

    cfg = train_cfg(task)
    cfg.num_steps_per_env = 8
    env = phalanx.make(task, num_envs=256, device="cuda", verbose=False)
    trainer = Trainer(cfg, env, run_dir=None)
    status = functools.partial(page_status, max_iterations=10)
    trainer.watch = TrainingView(env, "test", "127.0.0.1", unused_port(), cfg.num_steps_per_env, status)
    try:
        for _ in range(3):  # compile, warm up and capture, the page playing what it recorded
            trainer.iterate()
        assert trainer.watch._free.wait(60)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            trainer._collect(IntervalTimer(env.device))
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert trainer.watch.recording, "the page was free: the rollout was recorded"
    finally:
        trainer.watch.close()
