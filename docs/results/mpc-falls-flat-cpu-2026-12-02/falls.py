"""Falls of the heuristic over the QP or the MPC on flat ground, by the command they fell under."""
import sys, torch
from phalanx.training.registry import env_cfg, make, play_env_cfg
from phalanx.tasks.anymal.mdp import quadruped_control as qc
from phalanx.envs.mdp import observations as O

bc, n, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
import os
from phalanx.control import mpc as M
if os.environ.get("MU"):
    import dataclasses
    standing = qc.standing_body
    qc.standing_body = lambda *a: (dataclasses.replace(standing(*a)[0], mu=float(os.environ["MU"])), standing(*a)[1])
    print("controller mu", os.environ["MU"])
if os.environ.get("W"):
    w = tuple(float(x) for x in os.environ["W"].split(","))
    qc.MPCCfg = lambda: M.MPCCfg(state_weights=w)
    print("state weights", w)
cfg = play_env_cfg("anymal-qp", env_cfg("anymal-qp"))
cfg.actions.controller.params["body_controller"] = bc
import os
if os.environ.get("CMD"):
    vx, vy, wz = (float(c) for c in os.environ["CMD"].split(","))
    cfg.commands["base_velocity"].params.update(lin_vel_x=(vx, vx), lin_vel_y=(vy, vy), ang_vel_z=(wz, wz), heading=None, standing=0.0)
if os.environ.get("FR"):
    f = float(os.environ["FR"])
    cfg.events["physics_material"].params["friction_range"] = (f, f)
    print("friction", f)
for kv in sys.argv[4:]:
    k, v = kv.split("=")
    cfg.actions.controller.params[k] = float(v)
env = make(cfg, num_envs=n, device="cpu", seed=0, verbose=False)
zeros = torch.zeros(n, env.action_dim)
env.reset()
falls, ends, cmds_at_fall, cmd_all = 0, 0, [], []
age = torch.zeros(n)
vel = []
for t in range(steps):
    cmd = env.command("base_velocity").clone()
    obs, rew, term, trunc, extras = env.step(zeros)
    age += 1
    cmd_all.append(cmd)
    vel.append(torch.cat((O.root_lin_vel_b(env)[:, :2], O.root_ang_vel_b(env)[:, 2:]), -1))
    if term.any():
        falls += int(term.sum())
        cmds_at_fall.append(torch.cat((cmd[term], age[term, None]), -1))
    age[term | trunc] = 0
allc = torch.cat(cmd_all)
V = torch.cat(vel)
print("achieved (base frame) vx %.2f vy %.2f wz %.2f; asked %.2f %.2f %.2f; |v - cmd| %.3f" % (*V.mean(0).tolist(), *allc.mean(0).tolist(), (V[:, :2] - allc[:, :2]).norm(dim=-1).mean()))
print(f"{bc}: {falls} falls in {steps} steps x {n} envs ({falls / (steps * n) * 1000:.2f} per 1000 env steps)")
if cmds_at_fall:
    f = torch.cat(cmds_at_fall)
    speed = f[:, :2].norm(dim=-1)
    print("falls: |v| mean %.2f (all steps %.2f), |yaw rate| mean %.2f (all %.2f), lateral |vy| mean %.2f (all %.2f), age mean %.0f" % (
        speed.mean(), allc[:, :2].norm(dim=-1).mean(), f[:, 2].abs().mean(), allc[:, 2].abs().mean(), f[:, 1].abs().mean(), allc[:, 1].abs().mean(), f[:, 3].mean()))
    for lo, hi in ((0, 0.5), (0.5, 1.0), (1.0, 1.5)):
        m_all = ((allc[:, :2].norm(dim=-1) >= lo) & (allc[:, :2].norm(dim=-1) < hi)).float().sum()
        m_f = ((speed >= lo) & (speed < hi)).float().sum()
        print(f"  |v| in [{lo}, {hi}): {int(m_f)} falls over {int(m_all)} env steps = {m_f / max(m_all, 1) * 1000:.2f} per 1000")
