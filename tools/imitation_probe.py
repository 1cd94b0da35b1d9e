"""How well a student can imitate a quaternion shadow-cube teacher (one whose stored config
observes `object_quat` and `object_goal_quat_diff`) from other inputs, offline on the CPU.

    python tools/imitation_probe.py collect TEACHER [--envs 96] [--steps 1500]
    python tools/imitation_probe.py fit [--steps 2400] [--sets A B C]
    python tools/imitation_probe.py rollout TEACHER [--fit-steps 2400] [--steps 800]

collect: the teacher drives shadow-cube (half the steps with its exploration noise); each step
stores its observations, the cube's true corners, the goal's corners and its clamped actions
(imitation_data.pt), and measures how much its actions change with the cube's quaternions negated
(the same states). fit: an MLP of the teacher's size learns those actions from each input set,
on 80 % of the envs, and reports the mean squared error on the other 20 %:
  A  the teacher's own observations;
  B  the same with both quaternions (cube, cube-to-goal) turned to w >= 0: what an observer who
     cannot tell q from -q (the same rotation) sees;
  C  shadow-cube-vision's actor inputs with the cube's true corners (tools/shadow_corners_probe.py);
  D  C and the rotation from the goal to the cube as a matrix, computed from the two sets of
     corners (bilinear in them; unique, unlike a quaternion);
  E  C, fitted by an MLP twice as wide (1024, 1024, 512, 256).
rollout: fits C, then lets it drive (its mean plus the teacher's exploration noise, as a PPO
student acts) and reports its error against the teacher on its own states and on the teacher's.
"""

from __future__ import annotations

import argparse
import time
from statistics import mean

import torch
from torch import nn

from phalanx.envs.mdp.math import quat_unique
from phalanx.rl.models import mlp
from phalanx.tasks.shadow_hand.cube import CUBE_HALF_SIZE, CUBE_HOME
from phalanx.tasks.shadow_hand.mdp import manipulation
from phalanx.tasks.shadow_hand.mdp.manipulation import CORNERS
from phalanx.training.frozen_policy import checkpoint_actor
from phalanx.training.play import played
from phalanx.training.registry import make

DATA = "imitation_data.pt"
CUBE_QUAT, GOAL_QUAT, CUBE_TO_GOAL = slice(27, 31), slice(31, 35), slice(35, 39)
"""Columns of shadow-cube's policy observations (74: joint_pos 24, cube_pos 3, then these, then
fingertip_pos 15 and actions 20)."""


def vision_inputs(obs: torch.Tensor, goal_corners: torch.Tensor, corners: torch.Tensor) -> torch.Tensor:
    """Input set C: joint_pos, goal_quat, fingertip_pos, actions, the goal's and the cube's corners."""
    return torch.cat([obs[..., 0:24], obs[..., GOAL_QUAT], obs[..., 39:74], goal_corners, corners], -1)


def corners(env) -> tuple[torch.Tensor, torch.Tensor]:
    """The goal's and the cube's corners as shadow-cube-vision scales them (x 10)."""
    goal = 10 * manipulation.goal_keypoints(env, CUBE_HALF_SIZE)
    return goal, 10 * manipulation.object_keypoints(env, CUBE_HOME, CUBE_HALF_SIZE)


def teacher_and_env(path: str, envs: int, seed: int):
    """The teacher's actor and standard deviation, and the env it was trained in (its stored
    config: a quaternion teacher's, whose observations the columns above index)."""
    run = played("shadow-cube", path, None)
    env = make(run.env_cfg, num_envs=envs, device="cpu", seed=seed, verbose=False)
    actor = checkpoint_actor(run.state, path)(74, env.action_dim, torch.device("cpu"), 0)
    return actor, run.state["policy"]["log_std"].exp(), env


def collect(args) -> None:
    teacher, std, env = teacher_and_env(args.teacher, args.envs, seed=2)
    obs = env.reset()
    rec = {k: [] for k in ("obs", "corners", "goal_corners", "action")}
    flipped = []  # how differently the teacher acts on the same states with the cube's quaternions negated
    for _ in range(args.steps):
        p = obs["policy"]
        with torch.no_grad():
            a = teacher(p).clamp(-1, 1)
            turned = p.clone()
            turned[:, CUBE_QUAT], turned[:, CUBE_TO_GOAL] = -p[:, CUBE_QUAT], -p[:, CUBE_TO_GOAL]
            flipped.append((teacher(turned).clamp(-1, 1) - a).square().mean().item())
        goal, cube = corners(env)
        for key, value in zip(rec, (p.clone(), cube, goal, a), strict=True):
            rec[key].append(value)
        noisy = a + std * torch.randn_like(a) * (torch.rand(a.shape[0], 1) < 0.5)
        obs, *_ = env.step(noisy.clamp(-1, 1))
    data = {k: torch.stack(v, 1) for k, v in rec.items()}  # (envs, steps, dim)
    o = data["obs"]
    cube, goal, cube_to_goal = (
        (o[..., cols.start] < 0).float().mean().item() for cols in (CUBE_QUAT, GOAL_QUAT, CUBE_TO_GOAL)
    )
    print(f"share of w < 0: cube {cube:.3f}, goal {goal:.3f}, cube-to-goal {cube_to_goal:.3f}")
    print(f"the teacher's actions with the cube's quaternions negated: mean squared change {mean(flipped):.3f}")
    torch.save(data, DATA)


def rotation(points: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) the rotation that turns a cube's own corners to `points` (..., 24), its 8
    corners in `CORNERS`' order (any scale and offset): exact for a cube's corners, whose second
    moment is isotropic (sum of c c^T = 8 I for the unit cube's)."""
    p = points.unflatten(-1, (8, 3))
    p = p - p.mean(-2, keepdim=True)
    own = torch.tensor(CORNERS, dtype=p.dtype).view(8, 3)
    m = p.transpose(-1, -2) @ own  # (..., 3, 3) = scale * R
    return m / m[..., :, 0].norm(dim=-1, keepdim=True)[..., None, :]


def input_sets(data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    o = data["obs"]
    blind = torch.cat(
        [
            o[..., :27],
            quat_unique(o[..., CUBE_QUAT]),
            o[..., GOAL_QUAT],
            quat_unique(o[..., CUBE_TO_GOAL]),
            o[..., 39:],
        ],
        -1,
    )
    c = vision_inputs(o, data["goal_corners"], data["corners"])
    goal_to_cube = rotation(data["corners"]) @ rotation(data["goal_corners"]).transpose(-1, -2)
    return {"A": o, "B": blind, "C": c, "D": torch.cat([c, goal_to_cube.flatten(-2)], -1), "E": c}


def train(x: torch.Tensor, y: torch.Tensor, steps: int, test=None, width: int = 1) -> tuple[nn.Module, list[str]]:
    """An ELU MLP (512, 512, 256, 128) x `width` on standardized x, Adam 5e-4, batches of 4096."""
    mu, sd = x.mean(0), x.std(0) + 1e-2
    net = mlp(x.shape[-1], tuple(width * n for n in (512, 512, 256, 128)), y.shape[-1], "elu")
    opt, log = torch.optim.Adam(net.parameters(), 5e-4), []
    for step in range(1, steps + 1):
        i = torch.randint(0, x.shape[0], (4096,))
        loss = (net((x[i] - mu) / sd) - y[i]).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if test is not None and step % max(1, steps // 4) == 0:
            with torch.no_grad():
                error = (net((test[0] - mu) / sd) - test[1]).square().mean().item()
            log.append(f"{step}: train {loss.item():.3f} test {error:.3f}")
    return nn.Sequential(Standardize(mu, sd), net).requires_grad_(False), log


class Standardize(nn.Module):
    def __init__(self, mu: torch.Tensor, sd: torch.Tensor):
        super().__init__()
        self.mu, self.sd = mu, sd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mu) / self.sd


def fit(args) -> None:
    torch.manual_seed(0)
    data = torch.load(DATA, weights_only=True)
    split = int(0.8 * data["action"].shape[0])
    for name, x in input_sets(data).items():
        if name not in args.sets:
            continue
        y, start = data["action"], time.time()
        test = (x[split:].flatten(0, 1), y[split:].flatten(0, 1))
        width = 2 if name == "E" else 1
        _, log = train(x[:split].flatten(0, 1), y[:split].flatten(0, 1), args.steps, test, width)
        print(f"{name}: " + " | ".join(log) + f" ({time.time() - start:.0f} s)", flush=True)


def rollout(args) -> None:
    torch.manual_seed(0)
    data = torch.load(DATA, weights_only=True)
    x = vision_inputs(data["obs"], data["goal_corners"], data["corners"]).flatten(0, 1)
    student, _ = train(x, data["action"].flatten(0, 1), args.fit_steps)
    teacher, std, env = teacher_and_env(args.teacher, 64, seed=3)
    for driver in ("student", "teacher"):
        obs, errors = env.reset(), []
        for _ in range(args.steps):
            with torch.no_grad():
                taught = teacher(obs["policy"]).clamp(-1, 1)
                own = student(vision_inputs(obs["policy"], *corners(env)))
            errors.append((own - taught).square().mean().item())
            act = own if driver == "student" else taught
            obs, *_ = env.step((act + std * torch.randn_like(act)).clamp(-1, 1))
        half = len(errors) // 2
        print(
            f"the {driver} drives: the student's error, first 100 steps {sum(errors[:100]) / 100:.3f}, "
            f"last {len(errors) - half} steps {sum(errors[half:]) / (len(errors) - half):.3f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("teacher")
    c.add_argument("--envs", type=int, default=96)
    c.add_argument("--steps", type=int, default=1500)
    f = sub.add_parser("fit")
    f.add_argument("--steps", type=int, default=2400)
    f.add_argument("--sets", nargs="+", default=["A", "B", "C", "D", "E"])
    r = sub.add_parser("rollout")
    r.add_argument("teacher")
    r.add_argument("--fit-steps", type=int, default=2400)
    r.add_argument("--steps", type=int, default=800)
    args = parser.parse_args()
    torch.manual_seed(0)
    {"collect": collect, "fit": fit, "rollout": rollout}[args.command](args)


if __name__ == "__main__":
    main()
