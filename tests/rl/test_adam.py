"""FusedAdam against torch.optim.Adam(fused=True): the same steps bitwise, skipped steps, state
dicts that load either way, and no torch._dynamo import."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
import torch

from phalanx.rl.adam import FusedAdam


def _nets() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    a = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ELU(), torch.nn.Linear(16, 3))
    b = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ELU(), torch.nn.Linear(16, 3))
    b.load_state_dict(a.state_dict())
    return a, b


def _train(net: torch.nn.Module, opt, lr: torch.Tensor, steps: int, skip: set[int] = frozenset()) -> None:
    gen = torch.Generator().manual_seed(1)
    for k in range(steps):
        x = torch.randn(32, 5, generator=gen)
        opt.zero_grad(set_to_none=False) if isinstance(opt, torch.optim.Optimizer) else opt.zero_grad()
        (net(x) ** 2).mean().backward()
        lr.mul_(0.9)  # the schedule changes the tensor in place between steps
        opt.found_inf.fill_(1.0 if k in skip else 0.0)
        opt.step()


def test_steps_match_torch_fused_adam_bitwise() -> None:
    ours, theirs = _nets()
    lr_ours, lr_theirs = torch.tensor(1e-2), torch.tensor(1e-2)
    opt = FusedAdam(ours.parameters(), lr=lr_ours)
    ref = torch.optim.Adam(theirs.parameters(), lr=lr_theirs, fused=True)
    ref.found_inf = torch.zeros(())
    _train(ours, opt, lr_ours, 12, skip={3, 7})
    _train(theirs, ref, lr_theirs, 12, skip={3, 7})
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(p, q)
    for i, state in ref.state_dict()["state"].items():
        assert state["step"].item() == 10  # two of twelve skipped
        for key in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(opt.state_dict()["state"][i][key], state[key])


def test_a_skipped_step_changes_nothing() -> None:
    net, _ = _nets()
    opt = FusedAdam(net.parameters(), lr=torch.tensor(1e-2))
    _train(net, opt, opt.lr, 2)
    before = [p.clone() for p in net.parameters()]
    moments = {i: {k: v.clone() for k, v in s.items()} for i, s in opt.state.items()}
    (net(torch.ones(4, 5)) ** 2).sum().backward()
    opt.found_inf.fill_(1.0)
    opt.step()
    assert all(torch.equal(p, q) for p, q in zip(net.parameters(), before, strict=True))
    assert all(torch.equal(opt.state[i][k], moments[i][k]) for i in moments for k in moments[i])


def _saved_and_loaded(state: dict) -> dict:
    """The state dict through a checkpoint file: torch.save, then torch.load(weights_only=True)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_state_dicts_load_either_way_and_continue_alike() -> None:
    ours, theirs = _nets()
    opt = FusedAdam(ours.parameters(), lr=torch.tensor(1e-2))
    ref = torch.optim.Adam(theirs.parameters(), lr=torch.tensor(1e-2), fused=True)
    ref.found_inf = torch.zeros(())
    _train(ours, opt, opt.lr, 5)
    _train(theirs, ref, ref.param_groups[0]["lr"], 5)
    # torch.optim -> FusedAdam, and FusedAdam -> torch.optim, each then steps on as its source.
    ours2, theirs2 = _nets()
    ours2.load_state_dict(theirs.state_dict())
    theirs2.load_state_dict(ours.state_dict())
    loaded = FusedAdam(ours2.parameters(), lr=torch.tensor(1e-2 * 0.9**5))
    loaded.load_state_dict(_saved_and_loaded(ref.state_dict()))
    ref2 = torch.optim.Adam(theirs2.parameters(), lr=torch.tensor(1e-2 * 0.9**5), fused=True)
    ref2.load_state_dict(_saved_and_loaded(opt.state_dict()))
    ref2.found_inf = torch.zeros(())
    for net, o in ((ours2, loaded), (theirs2, ref2), (ours, opt), (theirs, ref)):
        lr = o.lr if isinstance(o, FusedAdam) else o.param_groups[0]["lr"]
        lr.fill_(1e-2 * 0.9**5)
        _train(net, o, lr, 3)
    nets = (ours2, theirs, theirs2, ours)
    for a, b, c, d in zip(*(net.parameters() for net in nets), strict=True):
        assert torch.equal(a, b) and torch.equal(c, d) and torch.equal(a, d)


def test_a_state_dict_for_other_parameters_is_refused() -> None:
    net, _ = _nets()
    opt = FusedAdam(net.parameters(), lr=torch.tensor(1e-2))
    other = FusedAdam(list(net.parameters())[:2], lr=torch.tensor(1e-2))
    with pytest.raises(ValueError, match="optimizer state for 2 parameters, the policy has 4"):
        opt.load_state_dict(other.state_dict())


def test_no_torch_dynamo_import() -> None:
    code = (
        "import sys, torch\n"
        "from phalanx.rl.adam import FusedAdam\n"
        "net = torch.nn.Linear(3, 2); opt = FusedAdam(net.parameters(), lr=torch.tensor(1e-3))\n"
        "net(torch.ones(1, 3)).sum().backward(); opt.step(); opt.zero_grad()\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda s: s[1].update(exp_avg=torch.zeros(3, 3)), "exp_avg of parameter 1 is torch.float32 (3, 3)"),
        (lambda s: s[0].update(exp_avg_sq=torch.zeros(16, 5, dtype=torch.int64)), "exp_avg_sq of parameter 0"),
        (lambda s: s[0].update(step=torch.zeros(2)), "step of parameter 0 is not one number"),
        (lambda s: s.update({7: s[0]}), "state for parameter 7, the policy has 4"),
    ],
    ids=["shape", "dtype", "step", "index"],
)
def test_a_state_that_does_not_fit_the_parameters_is_refused(change, reason: str) -> None:
    """Fused kernels given moments of another shape read past them (an internal assert, then a
    crash of the process): such state is refused before it is kept."""
    net, _ = _nets()
    opt = FusedAdam(net.parameters(), lr=torch.tensor(1e-2))
    _train(net, opt, opt.lr, 2)
    state = _saved_and_loaded(opt.state_dict())
    change(state["state"])
    fresh = FusedAdam(net.parameters(), lr=torch.tensor(1e-2))
    with pytest.raises(ValueError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        fresh.load_state_dict(state)
    assert fresh.state == {}
