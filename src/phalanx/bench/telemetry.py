"""A background sampler of GPU (NVML) and CPU (psutil) load, written as CSV."""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path
from typing import Any

import psutil

GPU_FIELDS = ["timestamp", "gpu", "utilization_pct", "memory_used_mib", "memory_total_mib", "temperature_c", "power_w"]
CPU_FIELDS = ["timestamp", "thread", "cpu_pct"]


def _nvml_handles() -> list[Any]:
    try:
        import pynvml

        pynvml.nvmlInit()
        return [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception:  # noqa: BLE001 (no NVML library or no GPU: CPU telemetry only)
        return []


class Telemetry:
    """Samples every `interval_s` until stopped: per GPU utilization, memory, temperature and
    power into gpu_metrics.csv; process CPU % (thread "process") and per-thread CPU % into
    cpu_metrics.csv. Without NVML or a GPU it records the CPU only and says so in `note`."""

    def __init__(self, out_dir: Path, interval_s: float = 0.5):
        self.out_dir, self.interval_s = Path(out_dir), interval_s
        self._handles = _nvml_handles()
        self.note = "" if self._handles else "no GPU visible through NVML: CPU telemetry only"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="phalanx-telemetry", daemon=True)
        self._gpu_rows: list[dict[str, float]] = []
        self._cpu_rows: list[dict[str, float]] = []

    def __enter__(self) -> Telemetry:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._process = psutil.Process()
        self._process.cpu_percent(None)
        self._threads = {t.id: t.user_time + t.system_time for t in self._process.threads()}
        self._last = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._write("gpu_metrics.csv", GPU_FIELDS, self._gpu_rows)
        self._write("cpu_metrics.csv", CPU_FIELDS, self._cpu_rows)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        now, stamp = time.perf_counter(), time.time()
        elapsed, self._last = now - self._last, now
        self._cpu_rows.append({"timestamp": stamp, "thread": "process", "cpu_pct": self._process.cpu_percent(None)})
        for t in self._process.threads():
            busy = t.user_time + t.system_time
            previous = self._threads.get(t.id, busy)
            self._threads[t.id] = busy
            self._cpu_rows.append({"timestamp": stamp, "thread": t.id, "cpu_pct": 100.0 * (busy - previous) / elapsed})
        if self._handles:
            import pynvml

            for i, handle in enumerate(self._handles):
                memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
                self._gpu_rows.append(
                    {
                        "timestamp": stamp,
                        "gpu": i,
                        "utilization_pct": pynvml.nvmlDeviceGetUtilizationRates(handle).gpu,
                        "memory_used_mib": memory.used / 2**20,
                        "memory_total_mib": memory.total / 2**20,
                        "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                        "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3,
                    }
                )

    def _write(self, name: str, fields: list[str], rows: list[dict[str, float]]) -> None:
        with open(self.out_dir / name, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)

    def summary(self) -> dict[str, Any]:
        """Averages over the samples: process CPU %, and per GPU utilization, memory, power."""
        process = [r["cpu_pct"] for r in self._cpu_rows if r["thread"] == "process"]
        out: dict[str, Any] = {"samples": len(process), "process_cpu_pct": _mean(process), "note": self.note}
        gpus = sorted({int(r["gpu"]) for r in self._gpu_rows})
        out["gpus"] = [
            {
                key: _mean([r[key] for r in self._gpu_rows if r["gpu"] == g])
                for key in ("utilization_pct", "memory_used_mib", "power_w", "temperature_c")
            }
            for g in gpus
        ]
        return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
