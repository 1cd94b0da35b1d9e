import torch
from phalanx.rl.critics import project
def atomic(probs, support, reward, bootstrap, discount):
    atoms = support.shape[0]; v_min, v_max = support[0], support[-1]; delta = (v_max - v_min) / (atoms - 1)
    target = (reward[:, None] + (bootstrap * discount)[:, None] * support).clamp(v_min, v_max)
    b = ((target - v_min) / delta).clamp(0, atoms - 1); lower, upper = b.floor().long(), b.ceil().long()
    on = lower == upper; lower = torch.where(on & (upper > 0), lower - 1, lower); upper = torch.where(on & (lower == upper), upper + 1, upper)
    out = torch.zeros_like(probs); out.scatter_add_(1, lower, probs * (upper.float() - b)); out.scatter_add_(1, upper, probs * (b - lower.float())); return out
for batch in (8192, 32768):
    support = torch.linspace(-250, 250, 251, device="cuda")
    probs = torch.softmax(torch.randn(batch, 251, device="cuda"), -1)
    args = (support, torch.randn(batch, device="cuda") * 5, (torch.rand(batch, device="cuda") > 0.01).float(), torch.full((batch,), 0.97, device="cuda"))
    for name, f in (("fixed", project), ("atomic", atomic)):
        for _ in range(3): f(probs, *args)
        torch.cuda.synchronize(); s, e = torch.cuda.Event(True), torch.cuda.Event(True); s.record()
        for _ in range(100): out = f(probs, *args)
        e.record(); torch.cuda.synchronize()
        print(batch, name, f"{s.elapsed_time(e) / 100 * 1000:.1f} us", "repeat-equal", torch.equal(f(probs, *args), f(probs, *args)))
    print(batch, "max diff", (project(probs, *args) - atomic(probs, *args)).abs().max().item())
