"""examples/slurm/phalanx.sbatch, dry-run on the CPU: a fake `srun` starts its command once per node
(as `--ntasks-per-node=1` does), a fake `scontrol` names the nodes, and the script's torchrun
agents train cartpole as two nodes over c10d rendezvous; the same job submitted again (a requeue)
continues from the run's last checkpoint."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "slurm" / "phalanx.sbatch"

SRUN = """#!/bin/bash
echo "$@" >> "$SRUN_LOG"
echo "grace=$TORCH_ELASTIC_SHUTDOWN_TIMEOUT cpus=$SRUN_CPUS_PER_TASK" >> "$SRUN_LOG"
while [[ $1 == --* ]]; do shift; done  # srun's own options
pids=()
for ((node = 0; node < SLURM_JOB_NUM_NODES; node++)); do SLURM_NODEID=$node "$@" & pids+=($!); done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _submit(tmp_path: Path, run_dir: Path, iterations: int) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "srun").write_text(SRUN)
    # `show hostnames`: the first node, then more than a pipe holds (a `| head -n 1` would end it
    # by SIGPIPE, which `set -o pipefail` makes the script's exit status)
    (bin_dir / "scontrol").write_text("#!/bin/bash\necho 127.0.0.1\nseq -f 'node%g' 100000\n")
    (bin_dir / "python").write_text(f'#!/bin/bash\nexec {shlex.quote(sys.executable)} "$@"\n')  # this interpreter
    for tool in ("srun", "scontrol", "python"):
        (bin_dir / tool).chmod(0o755)
    train = f"--device cpu --num-envs 16 --num-steps-per-env 8 --max-iterations {iterations}"
    env = os.environ | {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SRUN_LOG": str(tmp_path / "srun.log"),
        "SLURM_JOB_NODELIST": "node[1-2]",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_JOB_ID": "4242",
        "SLURM_CPUS_PER_TASK": "6",
        "TASK": "cartpole",
        "RUN_DIR": str(run_dir),
        "GPUS_PER_NODE": "1",
        "MASTER_PORT": str(_free_port()),
        "TRAIN_ARGS": train,
    }
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=900)


def test_the_slurm_script_trains_on_two_nodes_and_resumes_when_requeued(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = _submit(tmp_path, run_dir, 2)
    assert first.returncode == 0, first.stderr[-3000:]
    srun, grace = (tmp_path / "srun.log").read_text().splitlines()
    assert grace == "grace=300 cpus=6", "a save's grace for torchrun; the job's cores for srun's task"
    args = shlex.split(srun)
    assert args[:4] == ["--kill-on-bad-exit=1", "python", "-m", "phalanx.dist.launch"]
    assert " --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:" in srun
    assert "--rdzv_id phalanx-4242" in srun and "--max-restarts 3" in srun
    assert f"-m phalanx train cartpole --distributed --run-dir {run_dir} --resume last --device cpu" in srun
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [0, 1] and rows[-1]["frames"] == 2 * 8 * 16 * 2, "both nodes"

    again = _submit(tmp_path, run_dir, 4)  # requeued: the same command continues the run
    assert again.returncode == 0, again.stderr[-3000:]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [0, 1, 2, 3]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["model_2.pt", "model_4.pt", "model_last.pt"]
