import sys, dataclasses, time
import torch
import phalanx.tasks.anymal.mdp.quadruped_control as qc
from phalanx.training.registry import env_cfg, make
body, limits, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
orig = qc.QuadrupedCfg
if limits != "none":
    qc.QuadrupedCfg = lambda b, mpc=None: orig(b, mpc=mpc, torque_limits=(float(limits),) * 12)
torch.set_num_threads(1)
cfg = env_cfg("anymal-qp")
cfg.actions.controller.params["body_controller"] = body
env = make(cfg, num_envs=32, device="cpu", seed=seed, verbose=False)
zeros = torch.zeros(env.num_envs, env.action_dim)
env.reset()
first = torch.full((32,), -1); falls = 0; t = time.time()
err = []
for k in range(steps):
    obs, rew, term, trunc, extras = env.step(zeros)
    first[term.bool() & (first < 0)] = k; falls += int(term.sum())
print(f"{body} limits {limits} seed {seed}: falls {falls}, envs fallen {int((first>=0).sum())}/32 ({time.time()-t:.0f} s)", flush=True)
