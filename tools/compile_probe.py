"""Env steps/s of each task's captured step with and without torch.compile, alternating, in one
process per setting (so each pays its own start-up), and the seconds to the first step."""

import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, time
t0 = time.time()
import torch, phalanx
task, compile_ = sys.argv[1], sys.argv[2] == "1"
env = phalanx.make(task, num_envs=4096, device="cuda", compile=compile_)
a = torch.zeros(env.num_envs, env.action_dim, device="cuda")
env.step(a); env.step(a); torch.cuda.synchronize()
first = time.time() - t0
g = torch.Generator(device="cuda").manual_seed(0)
acts = [torch.rand(env.num_envs, env.action_dim, device="cuda", generator=g) * 2 - 1 for _ in range(8)]
for i in range(50): env.step(acts[i % 8])
torch.cuda.synchronize(); t = time.perf_counter()
for i in range(400): env.step(acts[i % 8])
torch.cuda.synchronize(); dt = time.perf_counter() - t
print(json.dumps({"task": task, "compile": compile_, "to_second_step_s": first, "fps_step": 400 * env.num_envs / dt}))
"""

for task in sys.argv[1:]:
    for _ in range(int(os.environ.get("ROUNDS", "2"))):
        for compile_ in ("1", "0"):
            out = subprocess.run([sys.executable, "-c", CHILD, task, compile_], capture_output=True, text=True)
            error = json.dumps({"task": task, "error": out.stderr[-500:]})
            line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else error
            print(line, flush=True)
