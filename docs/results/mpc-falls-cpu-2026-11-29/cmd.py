import sys, time
import torch
from phalanx.training.registry import env_cfg, make

body, preset, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = env_cfg("anymal-qp")
cfg.actions.controller.params["body_controller"] = body
p = cfg.commands["base_velocity"].params
vx, vy, wz = {"zero": (0, 0, 0), "fwd": (1.0, 0, 0), "back": (-1.0, 0, 0), "side": (0, 1.0, 0), "turn": (0, 0, 1.0), "fwdturn": (1.0, 0, 1.0)}[preset]
p.update(lin_vel_x=(vx, vx), lin_vel_y=(vy, vy), ang_vel_z=(wz, wz), heading_envs=0.0, standing=0.0)
env = make(cfg, num_envs=32, device="cpu", seed=0, verbose=False)
zeros = torch.zeros(env.num_envs, env.action_dim)
env.reset()
first_end = torch.full((env.num_envs,), -1)
falls = 0
for k in range(steps):
    obs, rew, term, trunc, extras = env.step(zeros)
    done = term.bool()
    first_end[done & (first_end < 0)] = k
    falls += int(done.sum())
print(f"{body} {preset}: falls {falls}; envs fallen {int((first_end>=0).sum())}/32; median first {first_end[first_end>=0].median().item() if (first_end>=0).any() else None}", flush=True)
