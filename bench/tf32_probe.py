"""PPO update time with TF32 and with float32 matrix products, without an env (random rollout data).
python bench/tf32_probe.py [NUM_ENVS] [OBS_DIM]"""

import sys
import time

import torch

from phalanx.rl.models import ActorCritic
from phalanx.rl.ppo import PPO, PPOCfg

num_envs, obs_dim = (int(a) for a in (sys.argv[1:] + ["16384", "60"])[:2])
if len(sys.argv) > 3:
    import phalanx

    env = phalanx.make(sys.argv[3], num_envs=num_envs)
    env.step(torch.zeros(num_envs, env.action_dim, device=env.device))
print("precision:", torch.backends.cuda.matmul.fp32_precision, torch.backends.fp32_precision)
for tf32 in (False, True, False, True):
    torch.manual_seed(0)
    hidden = (400, 200, 100)
    policy = ActorCritic(obs_dim, obs_dim, 8, hidden, hidden, "elu", 1.0).cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    ppo = PPO(policy, PPOCfg(), {"policy": (obs_dim,)}, num_envs, 32, False, gen, capture=True, tf32=tf32)
    s = ppo.storage
    for name in ("obs", "critic_obs", "actions", "log_probs", "values", "returns", "advantages", "action_mean"):
        getattr(s, name).normal_()
    s.action_std.fill_(1.0)
    for _ in range(3):
        ppo.update()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(10):
        ppo.update()
    torch.cuda.synchronize()
    print(f"tf32={tf32}: update {(time.perf_counter() - t) / 10 * 1e3:.1f} ms")
