"""A job launched in a session of its own stops when the process that launched it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phalanx.core.stops import PARENT_ENV

JOB = """
import os, signal, sys, time
from phalanx.core.stops import stop_with_parent, PARENT_ENV
stop_with_parent()
marker = sys.argv[1]
def stopped(*_):  # the marker appears whole (a reader polls for it)
    with open(marker + ".tmp", "w") as file:
        file.write(str(PARENT_ENV in os.environ))
    os.replace(marker + ".tmp", marker)
    os._exit(0)
signal.signal(signal.SIGTERM, stopped)
print("ready", flush=True)
time.sleep(120)
"""

PARENT = """
import os, subprocess, sys, time
env = dict(os.environ, PHALANX_STOP_WITH_PARENT=str(os.getpid()))
job = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], env=env, start_new_session=True,
                       stdout=subprocess.PIPE, text=True)
print(job.stdout.readline().strip(), flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_job_stops_when_its_launcher_is_killed_outright(tmp_path: Path) -> None:
    marker = tmp_path / "stopped"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, JOB, str(marker)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        assert not marker.exists()
        parent.kill()  # SIGKILL: nothing of the parent's own passes a stop on
        parent.wait(timeout=30)
        deadline = time.time() + 30
        while time.time() < deadline and not marker.exists():
            time.sleep(0.05)
        assert marker.read_text() == "False", "SIGTERM reached the job, whose children do not inherit the variable"
    finally:
        parent.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_job_whose_launcher_died_before_it_looked_stops_at_once(tmp_path: Path) -> None:
    marker = tmp_path / "stopped"
    env = dict(os.environ, **{PARENT_ENV: "1"})  # not its parent: the launcher is gone
    job = subprocess.run([sys.executable, "-c", JOB, str(marker)], env=env, timeout=60, capture_output=True, text=True)
    assert job.returncode == -signal.SIGTERM and "ready" not in job.stdout  # before its own handler: the default
