"""What a benchmark ran on: machine, accelerator, library versions, commit."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import socket
import subprocess
from pathlib import Path
from typing import Any

import torch

from phalanx.core.versions import versions


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(checkout: Path | None = None) -> str:
    """Short commit of the phalanx checkout (`checkout`: this package's), with "+dirty" where its
    tracked files differ from that commit (the code measured is not the commit's; a copy whose
    git metadata is older than its files reads so too); outside a git checkout the
    PHALANX_COMMIT environment variable, else "unknown"."""
    if os.environ.get("PHALANX_COMMIT"):
        return os.environ["PHALANX_COMMIT"]
    cwd = checkout or Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, cwd=cwd
        )
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=cwd,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    commit = head.stdout.strip()
    if not commit:
        return "unknown"
    return commit + ("+dirty" if changed.returncode == 0 and changed.stdout.strip() else "")


def machine_info() -> dict[str, Any]:
    """Host, CPU, GPUs (name, count, UUIDs, driver), versions and commit, as JSON-ready values.
    The UUIDs tell hosts of one GPU kind apart (their speeds differ)."""
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    uuids = [f"GPU-{torch.cuda.get_device_properties(i).uuid}" for i in range(len(gpus))]
    driver = "none"
    if gpus:
        try:
            import pynvml

            pynvml.nvmlInit()
            driver = pynvml.nvmlSystemGetDriverVersion()
        except Exception:  # noqa: BLE001 (NVML missing or failing only hides the driver version)
            driver = "unknown (no NVML)"
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu": gpus[0] if gpus else "none",
        "gpu_count": len(gpus),
        "gpu_uuids": uuids,
        "driver": driver,
        "versions": versions(),
        "commit": git_commit(),
    }


def tool_bench(kind: str, task: str, script: str, argv: list[str], device: str, **fields: Any) -> dict[str, Any]:
    """The bench.json of a contributor tool (`python tools/SCRIPT ARGV`) for `phalanx bench docs`
    (see `result_record`)."""
    return result_record(kind, task, ["python", f"tools/{script}", *argv], device, **fields)


def result_record(kind: str, task: str, command: list[str], device: str, **fields: Any) -> dict[str, Any]:
    """A bench.json for `phalanx bench docs` of a command that is not a `phalanx bench` (a tool,
    `phalanx play --out`): its command as run, quoted, without --out and the file it named (where
    the results went, not what ran), today's date, `device`, the machine, then `fields` (results,
    config, ...)."""
    kept, skip = [], False
    for arg in command:
        if skip:  # the file --out named
            skip = False
        elif arg == "--out":
            skip = True
        elif not arg.startswith("--out="):
            kept.append(arg)
    today = datetime.date.today().isoformat()
    return {
        "kind": kind,
        "task": task,
        "command": shlex.join(kept),
        "date": today,
        "device": device,
        "machine": machine_info(),
    } | fields
