"""`phalanx train TASK --teacher CKPT` on the CPU: a student learns a trained cartpole's actions on
the states it visits, the pixel twin trains with the state task's teacher, and a teacher that
does not fit is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

import pytest
import torch

import phalanx
from phalanx.cli import main
from phalanx.rl.cfg import DistillCfg, PolicyCfg
from phalanx.rl.ppo import TEACHER_GROUP
from phalanx.training.checkpoint import load_checkpoint
from phalanx.training.play import load_actor, run_episodes
from phalanx.training.registry import train_cfg

CPU = ["--device", "cpu"]
STUDENT = ["--num-envs", "16", "--num-steps-per-env", "8", "--max-iterations", "2", *CPU]
TINY_HAND = [*CPU, "--num-envs", "4", "--num-steps-per-env", "4", "--algo.num-mini-batches", "1"]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cartpole policy trained with the CPU defaults until it balances: its run directory."""
    run = tmp_path_factory.mktemp("teacher")
    assert main(["train", "cartpole", *CPU, "--max-iterations", "80", "--run-dir", str(run)]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["mean_episode_length"] >= 285  # it balances: worth learning from
    return run


def test_a_student_acts_as_its_teacher_on_the_states_it_visits(teacher: Path, tmp_path: Path) -> None:
    """A smaller cartpole network distilled from the teacher (through `phalanx.train`, without
    fine-tuning), played deterministically: on the states it visits itself its actions explain
    90 % of the variance of the teacher's (an untrained one's explain none), and its episodes
    last as long as the teacher's own."""
    cfg = train_cfg("cartpole")
    cfg.policy = PolicyCfg(actor_hidden_dims=(16, 16), critic_hidden_dims=(16, 16))
    cfg.distill = DistillCfg(iterations=30, mix_iterations=10)
    run = tmp_path / "student"
    trainer = phalanx.train("cartpole", cfg, teacher=str(teacher), max_iterations=30, device="cpu", run_dir=str(run))
    state = load_checkpoint(trainer.checkpoint_path(), "cartpole")
    assert state["config"]["teacher"] == str((teacher / "checkpoints" / "model_last.pt").resolve())
    env, taught = trainer.env, trainer.ppo.teacher
    student = load_actor(state, env)
    actions, targets = [], []

    def act(obs: dict[str, torch.Tensor]) -> torch.Tensor:
        actions.append(student(obs))
        targets.append(taught(obs[TEACHER_GROUP]))
        return actions[-1]

    episodes = run_episodes(env, act, 600)
    action, target = torch.cat(actions), torch.cat(targets)
    explained = float(1 - (action - target).square().mean() / target.var())
    assert explained >= 0.9, f"the student's actions explain {explained:.1%} of the variance of the teacher's"
    own = run_episodes(env, lambda obs: taught(obs[TEACHER_GROUP]), 600)
    assert mean(episodes.lengths) >= 0.95 * mean(own.lengths), (episodes.summary(), own.summary())


def test_the_pixel_twin_learns_from_the_state_tasks_teacher(teacher: Path, tmp_path: Path, capsys) -> None:
    """cartpole-rgb's student: the teacher's observations are cartpole's, computed from the same
    state (the critic's group holds the same terms), the run stores the teacher and its imitation
    loss, and a student resumes only with a teacher."""
    run = tmp_path / "student"
    flags = [*STUDENT, "--teacher", str(teacher), "--distill.iterations", "1", "--distill.mix-iterations", "1"]
    assert main(["train", "cartpole-rgb", *flags, "--run-dir", str(run)]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["env"]["observations"][TEACHER_GROUP] == config["env"]["observations"]["critic"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert all(row["loss/distill"] > 0 for row in rows)
    teacher_file = (teacher / "checkpoints" / "model_last.pt").resolve()
    assert config["teacher"] == str(teacher_file)
    resume = ["--resume", "last", "--max-iterations", "3", "--run-dir", str(run)]
    assert main(["train", "cartpole-rgb", *STUDENT, *resume]) == 2
    err = capsys.readouterr().err.strip()
    assert "--teacher: the checkpoint's policy was trained with --teacher " + str(teacher_file) in err, err
    cfg = {"device": "cpu", "num_envs": 16, "max_iterations": 1, "run_dir": str(tmp_path / "python")}
    trainer = phalanx.train("cartpole-rgb", teacher=str(teacher), **cfg)
    torch.testing.assert_close(trainer.env.obs[TEACHER_GROUP], trainer.env.obs["critic"])


@pytest.fixture(scope="module")
def hand_teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shadow-cube policy after one tiny iteration: its run directory."""
    run = tmp_path_factory.mktemp("hand-teacher")
    assert main(["train", "shadow-cube", *TINY_HAND, "--max-iterations", "1", "--run-dir", str(run)]) == 0
    return run


def test_the_state_hand_teaches_the_hand_that_sees(hand_teacher: Path, tmp_path: Path) -> None:
    """shadow-cube's policy (any, here after one iteration) teaches shadow-cube-vision: the
    student's env computes shadow-cube's policy observations, goal command included, and trains
    through the phase switch."""
    from phalanx.core.cfg_data import to_data
    from phalanx.training.registry import env_cfg

    run = str(tmp_path / "student")
    flags = ["--teacher", str(hand_teacher), "--distill.iterations", "1", "--distill.mix-iterations", "1"]
    assert main(["train", "shadow-cube-vision", *TINY_HAND, *flags, "--max-iterations", "2", "--run-dir", run]) == 0
    config = json.loads((tmp_path / "student" / "config.json").read_text())
    expected = json.loads(json.dumps(to_data(env_cfg("shadow-cube").observations["policy"])))
    assert config["env"]["observations"][TEACHER_GROUP] == expected


@pytest.mark.parametrize("margin", [0.0, 3.0])
def test_the_student_learns_the_actions_its_env_applies(hand_teacher: Path, tmp_path: Path, margin: float) -> None:
    """A teacher whose means overshoot env.actions.clip (its output layer scaled up 100x) teaches
    them clamped as its env applies them: to the clip, or with `distill.target_margin` to the clip
    plus that many of its standard deviations, each action its own (past them its noisy actions
    stay clipped too). The imitation targets stored in the rollout lie within that bound, where
    the raw means do not."""
    path = _altered(hand_teacher, tmp_path, _amplify_actions)
    cfg = train_cfg("shadow-cube-vision")
    cfg.distill = DistillCfg(iterations=1, mix_iterations=1, target_margin=margin)
    run = {"device": "cpu", "num_envs": 4, "num_steps_per_env": 4, "max_iterations": 1, "run_dir": str(tmp_path)}
    trainer = phalanx.train("shadow-cube-vision", cfg, teacher=path, **run)
    std = load_checkpoint(path, "shadow-cube")["policy"]["log_std"].exp()
    bound, taught = trainer.env.cfg.actions.clip + margin * std, trainer.ppo.teacher
    obs = trainer.env.obs[TEACHER_GROUP]
    raw = taught.actor(obs)
    assert (raw.abs() > bound).any(dim=0).all()  # every action overshoots in some env
    torch.testing.assert_close(taught(obs), raw.clamp(-bound, bound))
    torch.testing.assert_close(trainer.ppo.storage.teacher_actions.abs().amax(dim=(0, 1)), bound)


def test_a_student_resumes_exactly_across_the_phase_switch(teacher: Path, tmp_path: Path) -> None:
    """4 iterations straight (2 distilling, 2 of PPO) == 1, then --resume for 3 more: the same
    policy, optimizer state and learning rate (the teacher's share and the phase follow from the
    iteration)."""
    flags = ["--teacher", str(teacher), "--distill.iterations", "2", "--distill.mix-iterations", "2"]
    tiny = ["cartpole", *STUDENT[:4], *CPU, *flags]
    straight, first = tmp_path / "straight", tmp_path / "first"
    assert main(["train", *tiny, "--max-iterations", "4", "--run-dir", str(straight)]) == 0
    assert main(["train", *tiny, "--max-iterations", "1", "--run-dir", str(first)]) == 0
    assert main(["train", *tiny, "--max-iterations", "4", "--run-dir", str(first), "--resume", "last"]) == 0
    a, b = (torch.load(run / "checkpoints" / "model_4.pt", weights_only=True) for run in (straight, first))
    for name, tensor in a["policy"].items():
        assert torch.equal(tensor, b["policy"][name]), name
    for i, state in a["ppo"]["optimizer"]["state"].items():
        assert torch.equal(state["exp_avg_sq"], b["ppo"]["optimizer"]["state"][i]["exp_avg_sq"])
    assert torch.equal(a["ppo"]["learning_rate"], b["ppo"]["learning_rate"])


@pytest.mark.parametrize("phase", ["distilling", "fixed schedule", "PPO after distilling"])
def test_a_resumed_run_keeps_a_fixed_learning_rate_it_is_given(teacher: Path, tmp_path: Path, phase: str) -> None:
    """A learning rate that no schedule adapts (while a student imitates, or with `--algo.schedule
    fixed`), and the one PPO's adaptive schedule starts from after the imitation, is the resumed
    run's `--algo.learning-rate`, not the one its checkpoint stored. (The adaptive rate is logged
    after its update's one minibatch, which scales it by 1.5 at most.)"""
    one_step = ["--algo.num-learning-epochs", "1", "--algo.num-mini-batches", "1"]
    flags = {
        "distilling": ["--teacher", str(teacher)],
        "fixed schedule": ["--algo.schedule", "fixed"],
        "PPO after distilling": [
            "--teacher",
            str(teacher),
            "--distill.iterations",
            "1",
            "--distill.mix-iterations",
            "1",
        ],
    }[phase]
    tiny, run = ["cartpole", *STUDENT[:4], *CPU, *one_step, *flags], tmp_path / "run"
    assert main(["train", *tiny, "--max-iterations", "1", "--run-dir", str(run)]) == 0
    resumed = ["--max-iterations", "2", "--run-dir", str(run), "--resume", "last", "--algo.learning-rate", "2e-4"]
    assert main(["train", *tiny, *resumed]) == 0
    rates = [json.loads(line)["learning_rate"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rates[0] == pytest.approx(train_cfg("cartpole").algo.learning_rate)  # 1e-3
    if phase == "PPO after distilling":
        assert 2e-4 / 1.5 - 1e-9 <= rates[1] <= 2e-4 * 1.5 + 1e-9
    else:
        assert rates[1] == pytest.approx(2e-4)


def _altered(teacher: Path, tmp_path: Path, change) -> str:
    """A copy of the teacher's checkpoint with its stored config changed by `change`."""
    state = torch.load(teacher / "checkpoints" / "model_last.pt", weights_only=True)
    change(state)
    path = tmp_path / "altered.pt"
    torch.save(state, path)
    return str(path)


def _amplify_actions(state: dict) -> None:
    last = max(int(name.split(".")[1]) for name in state["policy"] if name.startswith("actor."))
    for part in ("weight", "bias"):
        state["policy"][f"actor.{last}.{part}"] *= 100.0


def _set_actions_scale(state: dict) -> None:
    state["config"]["env"]["actions"]["scale"] = 50.0


def _set_decimation(state: dict) -> None:
    state["config"]["env"]["sim"]["decimation"] = 4


def _set_image_policy(state: dict) -> None:
    state["config"]["policy"]["image_group"] = "image"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set_actions_scale, "with other actions (env.actions differ): it cannot teach 'cartpole-rgb'"),
        (_set_decimation, "at another control rate"),
        (_set_image_policy, "its policy reads images ('image'); a frozen actor reads vectors"),
    ],
)
def test_a_teacher_that_does_not_fit_is_one_line(teacher: Path, tmp_path: Path, change, message: str, capsys) -> None:
    path = _altered(teacher, tmp_path, change)
    assert main(["train", "cartpole-rgb", *STUDENT, "--teacher", path, "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and path in err, err
    assert not (tmp_path / "run" / "config.json").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--teacher", "last"], "--teacher: 'last' names this task's runs"),
        (["--teacher", "no/such.pt"], "--teacher: no file no/such.pt: a model_*.pt written by phalanx train"),
        (["--teacher", "TEACHER", "--trainer", "sb3"], "--teacher: a teacher teaches with phalanx's trainer"),
        (["--teacher", "TEACHER", "--distill.mix-iterations", "200"], "--distill.mix-iterations: got 200"),
        (
            ["--teacher", "TEACHER", "--distill.target-margin", "-1"],
            "--distill.target-margin: must be a finite number >= 0, got -1.0",
        ),
    ],
)
def test_bad_teacher_flags_are_one_line(teacher: Path, flags: list[str], message: str, capsys) -> None:
    flags = [str(teacher) if flag == "TEACHER" else flag for flag in flags]
    assert main(["train", "cartpole-rgb", *STUDENT, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
