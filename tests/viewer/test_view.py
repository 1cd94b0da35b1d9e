"""`phalanx view` end to end on the CPU: bad input is one line, and in a real (headless) browser
the page shows the robot and pause stops the sim time. The browser tests skip without Chromium
(Debian's `chromium`, which .ci/run installs) or Playwright; their screenshots go to
$PHALANX_ARTIFACTS (.ci/run: .ci/artifacts; else the test's temporary directory)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from helpers import unused_port
from phalanx.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_a_busy_port_is_one_line(capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["view", "cartpole", "--policy", "random", "--device", "cpu", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--port: {port} is not free on 127.0.0.1" in err, err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["cartpol", "--policy", "random"], "unknown task 'cartpol'"),
        (["cartpole", "--checkpoint", "UNREADABLE"], "UNREADABLE"),
        (["cartpole", "--policy", "wild"], "--policy: got 'wild'; allowed: zero, random"),
        (["cartpole", "--policy", "random", "--port", "70000"], "--port: must be a port in [0, 65535], got 70000"),
        (["cartpole", "--policy", "random", "--num-envs", "0"], "--num-envs"),
    ],
)
def test_bad_input_is_one_line(flags: list[str], message: str, tmp_path: Path, capsys) -> None:
    unreadable = tmp_path / "model_1.pt"
    unreadable.write_bytes(b"not a checkpoint")
    flags = [str(unreadable) if flag == "UNREADABLE" else flag for flag in flags]
    message = message.replace("UNREADABLE", str(unreadable))
    port = [] if "--port" in flags else ["--port", str(unused_port())]
    assert main(["view", *flags, "--device", "cpu", *port]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium, rendering WebGL in software (SwiftShader): no GPU needed."""
    if CHROMIUM is None:
        pytest.skip("needs Chromium (Debian: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        flags = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-sandbox"]
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
        yield chromium
        chromium.close()


@contextlib.contextmanager
def _served(browser, command: list[str], log: Path) -> Iterator[tuple[object, subprocess.Popen]]:
    """`command` (a phalanx command that serves the page on the port given last) started, its
    output in `log`, and, once it says where the page is, a browser tab opened on it."""
    port = unused_port()
    with log.open("w") as out:
        server = subprocess.Popen([*command, str(port)], stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 120
        while f"http://localhost:{port}" not in log.read_text():  # the env is built, the server up
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(f"http://127.0.0.1:{port}")
        yield page, server
        page.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """`phalanx view cartpole --policy random` on the CPU, opened in headless Chromium."""
    command = [sys.executable, "-m", "phalanx", "view", "cartpole", "--policy", "random", "--device", "cpu"]
    log = tmp_path_factory.mktemp("view") / "view.log"
    with _served(browser, [*command, "--num-envs", "4", "--port"], log) as (page, _):
        yield page


def _control(page, label: str):
    """The input of the panel's row labelled `label` (viser's labels name no input by id)."""
    row = page.locator("div.mantine-Flex-root", has=page.locator("label", has_text=re.compile(f"^{label}$")))
    return row.locator("input").first


def _sim_time(page) -> float:
    return float(re.match(r"[\d.]+", _control(page, "sim time").input_value()).group())


def _wait_for_time(page, after: float) -> float:
    deadline = time.monotonic() + 60
    while (now := _sim_time(page)) <= after:
        assert time.monotonic() < deadline, f"the sim time stayed at {now}"
        page.wait_for_timeout(200)
    return now


def _artifacts(tmp_path: Path) -> Path:
    where = Path(os.environ.get("PHALANX_ARTIFACTS", tmp_path))
    where.mkdir(parents=True, exist_ok=True)
    return where


def _shows_carts(page, shot: Path) -> None:
    """The screenshot is not blank and shows cartpole's orange carts (the only orange on the page:
    the ground, the panel and its curves are gray, white and blue)."""
    import imageio.v3 as iio

    page.screenshot(path=str(shot))
    image = iio.imread(shot)[..., :3].astype(int)
    assert image.std() > 10, "the page is blank"
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    orange = (r - b > 60) & (r > 120) & (g > b)
    assert orange.sum() > 30, f"no cart on the page ({orange.sum()} orange pixels): {shot}"


def test_training_shows_on_the_page_and_goes_on_when_the_page_closes(browser, tmp_path: Path) -> None:
    """`phalanx train cartpole --viewer` on the CPU: the page shows the iteration and the carts;
    the page closing does not stop the training, which a SIGTERM then stops as usual. (Before the
    tests of the module's `page`: its view, rendered by Chromium, would slow this training.)"""
    run = tmp_path / "run"
    command = [sys.executable, "-m", "phalanx", "train", "cartpole", "--device", "cpu", "--num-envs", "16"]
    command += ["--num-steps-per-env", "8", "--max-iterations", "100000", "--run-dir", str(run), "--logger", "none"]
    with _served(browser, [*command, "--viewer", "--viewer-port"], tmp_path / "train.log") as (page, server):
        page.get_by_text(re.compile(r"iteration \d+/\d+, [\d,]+ env steps/s, .*, ETA")).wait_for(timeout=60_000)
        page.wait_for_timeout(2000)  # the scene's meshes arrive and are drawn
        _shows_carts(page, _artifacts(tmp_path) / "train-cartpole.png")
        page.close()  # its websocket closes
        rows = len((run / "metrics.jsonl").read_text().splitlines())
        deadline = time.monotonic() + 120
        while len((run / "metrics.jsonl").read_text().splitlines()) < rows + 5:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "train.log").read_text()[-2000:]
            time.sleep(0.2)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 143
    assert "interrupted by SIGTERM: saved" in (tmp_path / "train.log").read_text()


def test_the_page_shows_the_robots(page, tmp_path: Path) -> None:
    """Once the sim runs, the page shows cartpole's carts."""
    _wait_for_time(page, 0.5)
    page.wait_for_timeout(2000)  # the scene's meshes arrive and are drawn
    _shows_carts(page, _artifacts(tmp_path) / "view-cartpole.png")


def test_pause_stops_the_sim_time(page, tmp_path: Path) -> None:
    """Clicking pause holds the sim time; the step button advances it by one env step; unpausing
    lets it run again."""
    pause = _control(page, "pause")
    pause.click()
    held, deadline = _sim_time(page), time.monotonic() + 10
    while (page.wait_for_timeout(1000) or _sim_time(page)) != held:  # the click reaches the server
        assert time.monotonic() < deadline, "the sim time runs on after pause"
        held = _sim_time(page)
    page.wait_for_timeout(1500)
    assert _sim_time(page) == held
    page.get_by_role("button", name="step").click()
    stepped = _wait_for_time(page, held)
    assert np.isclose(stepped - held, 1 / 60, atol=0.0015), (held, stepped)  # cartpole: 120 Hz physics, decimation 2
    page.screenshot(path=str(_artifacts(tmp_path) / "view-cartpole-paused.png"))
    pause.click()
    _wait_for_time(page, stepped + 0.5)


def test_a_newer_checkpoint_replaces_the_policy(tmp_path: Path) -> None:
    """Given a run directory, the view looks for its checkpoint again: after the run trains on
    (--resume), the next look returns the newer policy, which acts otherwise; then nothing newer."""
    import torch
    from rich.console import Console

    from phalanx.training.play import played
    from phalanx.training.registry import make
    from phalanx.view import NewestPolicy

    run = tmp_path / "run"
    train = ["train", "cartpole", "--device", "cpu", "--num-envs", "16", "--run-dir", str(run)]
    assert main([*train, "--max-iterations", "1"]) == 0
    first = played("cartpole", str(run), None)
    env = make(first.env_cfg, num_envs=4, device="cpu")
    act, _ = first.actor(env, 0)
    newest, console = NewestPolicy(str(run), "cartpole", first.checkpoint, env, every_s=0.0), Console(quiet=True)
    assert newest.poll(console) is None
    assert main([*train, "--max-iterations", "3", "--resume", "last"]) == 0
    swapped = newest.poll(console)
    assert swapped is not None and "(iteration 3)" in swapped[1], swapped
    obs = env.reset()
    assert not torch.equal(swapped[0](obs), act(obs))
    assert newest.poll(console) is None
