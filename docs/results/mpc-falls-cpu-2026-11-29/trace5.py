import sys, math
import torch
from phalanx.training.registry import env_cfg, make
steps = int(sys.argv[1])
cfg = env_cfg("anymal-qp")
cfg.actions.controller.params["body_controller"] = "mpc"
for n in ("reset_base", "reset_robot_joints", "push_robot"): cfg.events.pop(n)
env = make(cfg, num_envs=32, device="cpu", seed=0, verbose=False)
c = env.low_level.controller
last = {}
orig = c.step
def step(state, command, dt):
    out = orig(state, command, dt); last["o"], last["s"], last["c"] = out, state, command; return out
c.step = step
zeros = torch.zeros(32, env.action_dim)
env.reset()
log = []
for k in range(steps):
    cmdv = env.command("base_velocity").clone()
    obs, rew, term, trunc, extras = env.step(zeros)
    o, s, cm = last["o"], last["s"], last["c"]
    R = s.rotation
    roll = torch.atan2(R[:, 2, 1], R[:, 2, 2]); pitch = -torch.asin(R[:, 2, 0].clamp(-1, 1))
    log.append(dict(z=s.com[:, 2].clone(), roll=roll, pitch=pitch, vz=s.com_velocity[:, 2].clone(), v=s.com_velocity[:, :2].clone(), cmd=cmdv,
                    stance=o.stance.clone(), fz=o.forces[..., 2].clone(), tq=o.torques.abs().max(-1).values.clone(), fzft=s.feet[..., 2].clone(), term=term.clone(), w=s.angular_velocity.clone(), yr=cm.yaw_rate.clone()))
fell = [(k, e) for k in range(steps) for e in range(32) if log[k]["term"][e]]
print("falls:", fell[:8])
for k, e in fell[:2]:
    print(f"env {e} falls at {k}")
    for j in range(max(0, k - 24), k + 1, 2):
        L = log[j]
        print(f" {j:3d} z {L['z'][e]:.3f} r {math.degrees(L['roll'][e]):6.1f} p {math.degrees(L['pitch'][e]):6.1f} w {[round(x,1) for x in L['w'][e].tolist()]} v {[round(x,2) for x in L['v'][e].tolist()]} cmd {[round(x,2) for x in L['cmd'][e].tolist()]} yr {L['yr'][e]:.2f} st {L['stance'][e].int().tolist()} fz {[round(x) for x in L['fz'][e].tolist()]} tq {L['tq'][e]:.0f} footz {[round(x,2) for x in L['fzft'][e].tolist()]}")
