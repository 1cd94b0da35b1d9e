"""Launches the jobs, follows metrics/success, stops a job at 0.9 (moving mean of 5 rows)."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
from phalanx.bench.learn_job import MetricFollower

work = Path(sys.argv[1])
VARIANTS = json.loads(os.environ.get("VARIANTS", '{"head": [], "clip": ["--env.actions.clip", "10"]}'))
SEEDS = json.loads(os.environ.get("SEEDS", "[42, 1, 2, 3, 4, 5]"))
MAX_IT = int(os.environ.get("MAX_IT", "1500"))
specs = [(v, s) for s in SEEDS for v in VARIANTS]
gpus = [line.split("UUID: ")[1].rstrip(")") for line in (work / "gpus.txt").read_text().splitlines()]
jobs = []

def launch(k, v, s):
    run = work / "runs" / f"{v}-s{s}"
    run.mkdir(parents=True)
    cmd = [sys.executable, "-m", "phalanx", "train", "franka-lift", *VARIANTS[v], "--seed", str(s), "--device", "cuda:0",
           "--max-iterations", str(MAX_IT), "--save-interval", "1000000000", "--logger", "none", "--run-dir", str(run / "run")]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpus[k % len(gpus)])
    log = open(run / "train.log", "w")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    jobs.append(dict(name=f"{v}-s{s}", gpu=k % len(gpus), p=p, t0=time.time(),
                     f=MetricFollower(run / "run" / "metrics.jsonl", "metrics/success", 5), status="running"))
    print("launched", v, s, "gpu", k % len(gpus), flush=True)

def poll():
    for j in jobs:
        if j["status"] != "running":
            continue
        for row in j["f"].poll(time.time() - j["t0"]):
            j["last"] = (row["iteration"], round(row["from_launch_s"]), row["smoothed"])
            if row["smoothed"] is not None and row["smoothed"] >= 0.9 and "reached" not in j:
                j["reached"] = j["last"]
                os.killpg(j["p"].pid, signal.SIGTERM)
                j["status"] = "reached"
        if j["status"] == "running" and j["p"].poll() is not None:
            j["status"] = f"exit {j['p'].returncode}"
    state = [{k: v for k, v in j.items() if k in ("name", "gpu", "status", "last", "reached")} for j in jobs]
    (work / "status.json").write_text(json.dumps(state, indent=1))
    return state

launch(0, *specs[0])  # warms the compile caches for the others
while not jobs[0]["f"].rows and jobs[0]["p"].poll() is None:
    time.sleep(2); poll()
for k, (v, s) in enumerate(specs[1:], start=1):
    launch(k, v, s)
while any(j["status"] == "running" for j in jobs):
    time.sleep(5)
    state = poll()
    if int(time.time()) % 60 < 5:
        print(time.strftime("%H:%M:%S"), [(j["name"], j["status"], j.get("last")) for j in state], flush=True)
print("done", flush=True)
