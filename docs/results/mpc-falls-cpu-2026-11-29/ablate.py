"""Zero actions in anymal-qp (play variant? no: the train env) with the MPC or QP, each event
removed in turn: episodes ended by falls within STEPS steps."""
import sys, time
import torch
from phalanx.training.registry import env_cfg, make

body, drop, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = env_cfg("anymal-qp")
cfg.actions.controller.params["body_controller"] = body
for name in drop.split(","):
    if name and name != "none":
        cfg.events.pop(name)
env = make(cfg, num_envs=32, device="cpu", seed=0, verbose=False)
zeros = torch.zeros(env.num_envs, env.action_dim)
env.reset()
ended = torch.zeros(env.num_envs, dtype=torch.long)
first_end = torch.full((env.num_envs,), -1)
t = time.time()
heights = []
for k in range(steps):
    obs, rew, term, trunc, extras = env.step(zeros)
    done = term.bool() if term.dtype != torch.bool else term
    newly = done & (first_end < 0)
    first_end[newly] = k
    ended += done.long()
print(f"{body} drop={drop}: falls {int(ended.sum())} in {steps} steps x 32 envs; envs fallen at least once {int((first_end>=0).sum())}; median first fall {first_end[first_end>=0].median().item() if (first_end>=0).any() else None}; {time.time()-t:.0f}s", flush=True)
