"""Warp's kernel cache where Warp cannot write it: one warning line, a temporary cache, and the
kernels still compile and run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import torch, warp as wp
from phalanx.core.warp_streams import launch

@wp.kernel
def twice(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = 2.0 * a[i]

out = torch.zeros(3)
launch(twice, 3, [torch.arange(3.0)], [out], torch.device("cpu"))
print(out.tolist(), wp.config.kernel_cache_dir)
"""


def _unwritable_directory() -> str | None:
    """An existing directory that refuses new files even to root (sysfs), where there is one."""
    try:
        Path("/sys/phalanx-probe").write_text("")
    except OSError:
        return "/sys" if Path("/sys").is_dir() else None
    Path("/sys/phalanx-probe").unlink()
    return None


@pytest.mark.parametrize("where", ["file", "unwritable directory"])
def test_a_kernel_cache_warp_cannot_write_falls_back_to_a_temporary_one(tmp_path: Path, where: str) -> None:
    if where == "file":
        blocker = tmp_path / "not-a-directory"
        blocker.write_text("")
    elif (found := _unwritable_directory()) is not None:
        blocker = Path(found)
    else:
        pytest.skip("no directory here refuses a new file")
    script = tmp_path / "kernel.py"  # Warp reads a kernel's source from its file
    script.write_text(SCRIPT)
    env = os.environ | {"WARP_CACHE_PATH": str(blocker)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    values, cache = done.stdout.strip().splitlines()[-1].split("] ")
    assert values == "[0.0, 2.0, 4.0" and "phalanx-warp-cache-" in cache
    warnings = [line for line in done.stderr.splitlines() if "phalanx: warning" in line]
    assert len(warnings) == 1 and f"kernel cache {blocker}" in warnings[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not Path(cache.split()[-1].strip()).exists()  # removed at exit


def test_a_cached_build_warp_cannot_load_is_compiled_again(tmp_path: Path) -> None:
    script = tmp_path / "kernel.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"
    env = os.environ | {"WARP_CACHE_PATH": str(cache)}

    def run() -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1].startswith("[0.0, 2.0, 4.0] ")
        return done

    run()
    binaries = [p for p in cache.rglob("*") if p.suffix in (".o", ".cubin", ".ptx")]
    assert binaries
    for binary in binaries:  # torn writes: a disk that filled, a copy cut short
        binary.write_bytes(binary.read_bytes()[:100])
    for meta in cache.rglob("*.meta"):
        meta.write_text("{")
    warnings = [line for line in run().stderr.splitlines() if "phalanx: warning" in line]
    assert len(warnings) == 1 and "holds builds it cannot load" in warnings[0] and str(cache) in warnings[0]
    assert not [line for line in run().stderr.splitlines() if "phalanx: warning" in line]  # healed


def test_dropped_stderr_lines_drops_only_the_named_lines(capfd) -> None:
    from phalanx.core.warp_cache import dropped_stderr_lines

    with dropped_stderr_lines("native noise"):
        os.write(2, b"native noise: no driver\nnative error: kept\n")
        print("python line: kept", file=sys.stderr)
    err = capfd.readouterr().err
    assert "native noise" not in err and "native error: kept" in err and "python line: kept" in err


def test_warp_starts_without_the_no_driver_warning() -> None:
    """On a machine without a CUDA driver Warp's native start prints a warning; phalanx's start
    leaves it out (where a driver is present there is none to leave out)."""
    code = "from phalanx.core.warp_cache import init_warp; init_warp(); print('started')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("started"), out.stderr
    assert "Warp CUDA warning" not in out.stderr, out.stderr


def test_a_simulator_built_directly_prints_no_warp_compile_lines() -> None:
    """Outside `phalanx.make` (which takes `verbose`), Warp's banner and per-module lines stay off."""
    code = (
        "import mujoco; from phalanx.assets import asset_path; from phalanx.sim.cfg import SimCfg; "
        "from phalanx.sim.simulator import Simulator; "
        "sim = Simulator(mujoco.MjModel.from_xml_path(asset_path('cartpole.xml')), 2, 'cpu', SimCfg()); "
        "sim.step(); print('stepped')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "stepped", out.stdout[-2000:] + out.stderr[-2000:]
