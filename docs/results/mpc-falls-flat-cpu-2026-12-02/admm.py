"""How far the MPC's ADMM forces (interval 0) lie from the exact QP's (proxsuite), during a walk."""
import sys, torch
from phalanx.training.registry import env_cfg, make, play_env_cfg
from phalanx.control import quadruped as qd
from phalanx.control.host_qp import HostQP

n, steps = int(sys.argv[1]), int(sys.argv[2])
cfg = play_env_cfg("anymal-qp", env_cfg("anymal-qp"))
cfg.actions.controller.params["body_controller"] = "mpc"
env = make(cfg, num_envs=n, device="cpu", seed=0, verbose=False)
errs, res_p, res_d = [], [], []
orig = qd.QuadrupedController.mpc_forces
host = {}
def patched(self, state, command, frequency, stance):
    mpc = self.mpc
    captured = {}
    solve = self.mpc_qp.solve
    def spy(*args):
        captured["args"] = args
        return solve(*args)
    self.mpc_qp.solve = spy
    try:
        forces, sol = orig(self, state, command, frequency, stance)
    finally:
        self.mpc_qp.solve = solve
    if "h" not in host:
        host["h"] = HostQP(state.feet.shape[0], mpc.num_variables, mpc.num_constraints, eps_abs=1e-7, max_iter=5000)
    exact = host["h"].solve(*captured["args"])
    fa = mpc.forces(sol.x)[:, 0] * stance[..., None]
    fe = mpc.forces(exact.x)[:, 0] * stance[..., None]
    errs.append(((fa - fe).norm(dim=-1).amax(-1) / mpc.weight))
    res_p.append(sol.primal_residual); res_d.append(sol.dual_residual)
    return forces, sol
qd.QuadrupedController.mpc_forces = patched
zeros = torch.zeros(n, env.action_dim)
env.reset()
for t in range(steps):
    env.step(zeros)
e = torch.cat(errs)
print(f"interval-0 force error / weight: median {e.median():.4f}, p99 {e.quantile(0.99):.4f}, p999 {e.quantile(0.999):.4f}, max {e.max():.4f}, share > 0.05: {(e > 0.05).float().mean():.4f}, > 0.2: {(e > 0.2).float().mean():.4f}")
print(f"ADMM primal residual median {torch.cat(res_p).median():.2e}, dual {torch.cat(res_d).median():.2e}")
