"""compile_boundary: torch.compile runs the marked methods as they are, whether their class was
defined before anything compiled or after; a process that compiles nothing never imports
torch._dynamo, and an env that compiles imports it before its physics' modules compile."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import types

import torch

from phalanx.core import compiling
from phalanx.core.compiling import compile_boundary, compiled, import_compiler


def _seen_while_compiling(cls: type) -> list[bool]:
    """Calls a compiled function around `cls().record` twice; what `record` saw of
    torch.compiler.is_compiling() each time (True where torch.compile traced into it)."""
    obj = cls()
    fn = compiled(lambda x: obj.record(x * 2) + 1, dynamic=False)
    for _ in range(2):
        torch.testing.assert_close(fn(torch.ones(3)), torch.full((3,), 3.0))
    return obj.seen


def test_boundaries_run_as_they_are_under_torch_compile() -> None:
    class Before:
        def __init__(self):
            self.seen = []

        @compile_boundary
        def record(self, x: torch.Tensor) -> torch.Tensor:
            self.seen.append(torch.compiler.is_compiling())
            return x

    assert _seen_while_compiling(Before) == [False, False]  # called eagerly, at each call

    class After(Before):  # defined once torch._dynamo is loaded: marked at once
        @compile_boundary
        def record(self, x: torch.Tensor) -> torch.Tensor:
            self.seen.append(torch.compiler.is_compiling())
            return x

    assert _seen_while_compiling(After) == [False, False]


def test_training_without_compile_never_imports_torch_dynamo(tmp_path) -> None:
    """cartpole on the CPU: env, PPO and its optimizer, checkpoint, all without torch._dynamo
    (importing it takes about a second of start-up)."""
    args = ["train", "cartpole", "--num-envs", "16", "--max-iterations", "1", "--logger", "none"]
    code = (
        "import sys\n"
        "from phalanx.cli import main\n"
        f"assert main({[*args, '--run-dir', str(tmp_path / 'run')]!r}) == 0\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


def test_an_env_that_compiles_imports_the_compiler_before_its_physics() -> None:
    """Imported beside Warp's compile threads, torch.compile's machinery took 7.3 s instead of 2-3
    s of a cold start on an H100: an env that compiles imports it before its `Simulator` starts
    them; one that does not, never."""
    code = (
        "import sys\n"
        "import phalanx\n"
        "from phalanx.envs import task_env\n"
        "seen, simulator = [], task_env.Simulator\n"
        "def spy(*args, **kwargs):\n"
        "    seen.append('torch._inductor.compile_fx' in sys.modules)\n"
        "    return simulator(*args, **kwargs)\n"
        "task_env.Simulator = spy\n"
        "for compile in (False, True):\n"
        "    phalanx.make('cartpole', num_envs=2, device='cpu', verbose=False, compile=compile, reset=False)\n"
        "print(seen)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[False, True]"


def test_compiled_names_kernels_short_beside_the_callers_options(monkeypatch) -> None:
    """`compiled` adds `SHORT_KERNEL_NAMES` to the options a caller gives to inductor (which win
    where both set one); not to another backend's, nor beside a `mode`, which torch.compile takes
    only without options. The GPU test `test_every_compiled_kernel_launches_from_the_graph_cache`
    shows why."""
    seen = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: seen.append(kwargs) or fn)
    compiled(abs, dynamic=False, options={"triton.autotune_pointwise": False})
    compiled(abs, options=None)
    compiled(abs, backend="eager")
    compiled(abs, mode="max-autotune")
    short = {"triton.descriptive_names": False}
    assert seen == [
        {"dynamic": False, "options": short | {"triton.autotune_pointwise": False}},
        {"options": short},
        {"backend": "eager"},
        {"mode": "max-autotune"},
    ]


def test_import_compiler_hashes_triton_off_the_main_thread(monkeypatch) -> None:
    """inductor's first compile hashes Triton (`triton_key`, 0.4 s of an H100 start): after
    `import_compiler` a thread of its own does it, and `compiled` waits for that thread, whose
    imports of Triton's packages must not run beside a compile's. A stand-in Triton records
    where it was hashed and when it was done."""
    import torch._inductor.compile_fx  # noqa: F401 (before the stand-in: it imports Triton where there is one)

    hashed = []

    def triton_key() -> None:
        time.sleep(0.3)
        hashed.append(threading.current_thread().name)

    cache = types.ModuleType("triton.runtime.cache")
    cache.triton_key = triton_key
    for name, module in {"triton": None, "triton.runtime": None, "triton.runtime.cache": cache}.items():
        monkeypatch.setitem(sys.modules, name, module or types.ModuleType(name))
    monkeypatch.setattr(compiling, "_HASHING", [])  # as in a process that has not hashed yet
    import_compiler()
    assert hashed == []  # still hashing: import_compiler did not wait
    compiled(abs, backend="eager")
    assert hashed == ["triton-key"]
