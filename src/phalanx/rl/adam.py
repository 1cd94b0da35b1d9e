"""Adam as one fused kernel per step: `torch._fused_adam_`, which `torch.optim.Adam(fused=True)`
runs, called without torch.optim. Constructing a torch.optim optimizer imports torch._dynamo
(about a second of start-up) even in a process that compiles nothing: cartpole, every run on the
CPU, `phalanx play`. State dicts keep torch.optim.Adam's layout, so a checkpoint
loads either way."""

from __future__ import annotations

from collections.abc import Iterable

import torch


class FusedAdam:
    """Adam (no weight decay, no AMSGrad) over `params` with a device tensor learning rate `lr`,
    which the caller may change in place between steps (or inside a CUDA graph). Per-parameter
    state is created at the first step that finds the parameter with a gradient, as torch.optim
    does; step counts stay on the device, so a step can be captured in a CUDA graph after one eager
    step. `found_inf` (a device scalar) set to 1 makes `step` leave everything as it was."""

    def __init__(self, params: Iterable[torch.Tensor], lr: torch.Tensor, betas=(0.9, 0.999), eps: float = 1e-8):
        self.params = list(params)
        self.lr = lr
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.found_inf = torch.zeros((), device=lr.device)
        self.state: dict[int, dict[str, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        """Drops the gradients: the next backward pass hands each parameter its gradient as it is
        computed, where zeroed buffers cost a kernel to zero and one to accumulate into each (a
        graph captures the tensors backward allocates in its own pool, at fixed addresses)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        with_grad = [i for i, p in enumerate(self.params) if p.grad is not None]
        for i in with_grad:
            if i not in self.state:
                p = self.params[i]
                self.state[i] = {
                    "step": torch.zeros((), dtype=torch.float32, device=p.device),
                    "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
                }
        if not with_grad:
            return
        states = [self.state[i] for i in with_grad]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(
            [self.params[i] for i in with_grad],
            [self.params[i].grad for i in with_grad],
            [s["exp_avg"] for s in states],
            [s["exp_avg_sq"] for s in states],
            [],
            steps,
            amsgrad=False,
            lr=self.lr,
            beta1=self.beta1,
            beta2=self.beta2,
            weight_decay=0.0,
            eps=self.eps,
            maximize=False,
            grad_scale=None,
            found_inf=self.found_inf,
        )
        torch._foreach_sub_(steps, [self.found_inf] * len(steps))  # a skipped step does not count

    def state_dict(self) -> dict:
        """torch.optim.Adam(fused=True)'s layout: per-parameter state by index, one param group."""
        group = {
            "lr": self.lr,
            "betas": (self.beta1, self.beta2),
            "eps": self.eps,
            "weight_decay": 0.0,
            "amsgrad": False,
            "maximize": False,
            "foreach": None,
            "capturable": self.lr.device.type == "cuda",
            "differentiable": False,
            "fused": True,
            "decoupled_weight_decay": False,
            "params": list(range(len(self.params))),
        }
        return {"state": dict(self.state), "param_groups": [group]}

    def load_state_dict(self, state_dict: dict) -> None:
        """Copies a state dict of this layout (this class's or torch.optim.Adam's) for the same
        parameters; the learning rate stays this optimizer's tensor."""
        (group,) = state_dict["param_groups"]
        if len(group["params"]) != len(self.params):
            raise ValueError(
                f"optimizer state for {len(group['params'])} parameters, the policy has {len(self.params)}"
            )
        check_adam_state(state_dict, self.params)
        self.state = {}
        for i, saved in state_dict["state"].items():
            p = self.params[int(i)]
            self.state[int(i)] = {  # copies: the source may go on stepping its own tensors
                "step": saved["step"].to(device=p.device, dtype=torch.float32, copy=True),
                "exp_avg": saved["exp_avg"].to(device=p.device, dtype=p.dtype, copy=True),
                "exp_avg_sq": saved["exp_avg_sq"].to(device=p.device, dtype=p.dtype, copy=True),
            }


def check_adam_state(state_dict: dict, params: list[torch.Tensor]) -> None:
    """Refuses (ValueError) an Adam state dict whose per-parameter state does not fit `params`: an
    index out of range, moments of another shape or not floating point, a step that is not one
    number. torch's fused kernels read such state past its end and can crash the process."""
    for key, saved in state_dict["state"].items():
        i = int(key)
        if not 0 <= i < len(params):
            raise ValueError(f"optimizer state for parameter {key!r}, the policy has {len(params)}")
        shape = tuple(params[i].shape)
        for name in ("exp_avg", "exp_avg_sq"):
            moment = saved[name]
            if not isinstance(moment, torch.Tensor) or not moment.is_floating_point() or tuple(moment.shape) != shape:
                got = (
                    f"{moment.dtype} {tuple(moment.shape)}"
                    if isinstance(moment, torch.Tensor)
                    else type(moment).__name__
                )
                raise ValueError(f"optimizer state {name} of parameter {i} is {got}, the parameter is {shape}")
        step = saved["step"]
        if not (isinstance(step, torch.Tensor) and step.numel() == 1) and not isinstance(step, int | float):
            raise ValueError(f"optimizer state step of parameter {i} is not one number")
