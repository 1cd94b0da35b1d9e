import sys, json
import torch
from phalanx.control.mpc import MPCCfg, STATE_WEIGHTS
import phalanx.tasks.anymal.mdp.quadruped_control as qc
from phalanx.training.registry import env_cfg, make

preset, steps, fw, vzw = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
w = list(STATE_WEIGHTS); w[11] = vzw
qc.MPCCfg = lambda: MPCCfg(force_weight=fw, state_weights=tuple(w))
cfg = env_cfg("anymal-qp")
cfg.actions.controller.params["body_controller"] = "mpc"
if preset == "zero":
    cfg.commands["base_velocity"].params.update(lin_vel_x=(0, 0), lin_vel_y=(0, 0), ang_vel_z=(0, 0), heading_envs=0.0, standing=0.0)
env = make(cfg, num_envs=32, device="cpu", seed=0, verbose=False)
zeros = torch.zeros(env.num_envs, env.action_dim)
env.reset()
first = torch.full((32,), -1); falls = 0; err = 0.0
for k in range(steps):
    obs, rew, term, trunc, extras = env.step(zeros)
    first[term.bool() & (first < 0)] = k; falls += int(term.sum())
print(f"{preset} force_weight {fw} vz_weight {vzw}: falls {falls}, envs fallen {int((first>=0).sum())}/32", flush=True)
