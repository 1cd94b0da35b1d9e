"""`phalanx list` and `python -m phalanx`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from phalanx.cli import main


def test_list_shows_every_task_from_its_config(capsys) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name, step, episode in [("cartpole", "2 x model dt", "5 s"), ("anymal-nav", "40 x 5 ms", "8 s")]:
        line = next(line for line in out.splitlines() if f" {name} " in line)
        assert step in line and episode in line and "phalanx.tasks." in line


def test_list_builds_no_env_and_loads_no_warp() -> None:
    """Listing reads the registered configs: no model is compiled and no Warp module loads."""
    code = (
        "import sys; from phalanx.cli import main; main(['list']); print(sorted(set(sys.modules) & {'warp', 'mujoco'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("[]"), out.stdout[-300:] + out.stderr


def test_python_dash_m_and_bad_subcommand() -> None:
    ok = subprocess.run([sys.executable, "-m", "phalanx", "list"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "humanoid" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "phalanx", "lst"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_help_names_every_command_and_bench_kind(capsys) -> None:
    """`phalanx --help` and `phalanx bench --help` name every command and bench kind there is."""
    from phalanx.bench.command import KINDS
    from phalanx.cli import COMMANDS

    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert all(f"phalanx {command}" in top for command in COMMANDS)
    assert "|".join(KINDS) in top
    assert main(["bench", "--help"]) == 0
    usage = capsys.readouterr().out
    assert all(f"\n  {kind} " in usage for kind in KINDS)


def test_list_help_prints_its_usage_and_stray_arguments_are_refused(capsys) -> None:
    assert main(["list", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: phalanx list") and "cartpole" not in out
    assert main(["list", "cartpole"]) == 2
    assert capsys.readouterr().err.strip() == "phalanx list: error: takes no arguments, got 'cartpole'"


def test_train_help_shows_no_python_object_addresses(capsys) -> None:
    """A term's function is fixed by the task: the help does not list it as `<function f at 0x...>`."""
    with pytest.raises(SystemExit) as stop:
        main(["train", "cartpole", "--help-env"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "--env.rewards.alive.weight" in out and " at 0x" not in out


def test_train_help_lists_the_training_flags_and_names_the_envs(capsys) -> None:
    """`--help` leaves out the env's flags (one group per term: most of the lines) and says how
    to see them; `--help-env` lists every flag."""
    with pytest.raises(SystemExit) as stop:
        main(["train", "cartpole", "--seed", "3", "--help"])
    assert stop.value.code == 0
    short = capsys.readouterr().out
    assert (
        "--max-iterations" in short
        and "--distill.iterations" in short
        and "--env." not in short.replace("(--env.*", "")
    )
    assert "`phalanx train cartpole --help-env`" in short
    with pytest.raises(SystemExit):
        main(["train", "cartpole", "--help-env"])
    full = capsys.readouterr().out
    assert "--max-iterations" in full and "--env.sim.decimation" in full
    assert len(short.splitlines()) < len(full.splitlines()) / 2


def test_a_flags_help_rewraps_its_docstring_as_one_paragraph(monkeypatch, capsys) -> None:
    """A field's docstring reaches tyro with its continuation lines indented; each source line
    used to be wrapped on its own (a word or two left on a line of the help)."""
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main(["train", "cartpole", "--help"])
    out = capsys.readouterr().out
    start = out.index("--spread-episode-ends")
    lines = [line.strip("│ ") for line in out[start:].splitlines()[1:6]]
    paragraph = lines[: next(i for i, line in enumerate(lines) if "(default:" in line) + 1]
    assert len(paragraph) >= 3 and all(len(line) > 70 for line in paragraph[:-2]), paragraph


def test_a_stop_that_python_wrapped_is_still_one_line(monkeypatch, capsys) -> None:
    """Python 3.11 wraps an exception raised inside a class's creation (a Ctrl-C landing in an
    import) in a RuntimeError: still a stop, one line, status 130."""
    import phalanx.cli

    def interrupted_import(args, console) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as stop:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance 'fields' in 'Task'") from stop

    monkeypatch.setattr(phalanx.cli, "list_tasks", interrupted_import)
    assert main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "phalanx list: stopped by SIGINT"
    monkeypatch.setattr(phalanx.cli, "list_tasks", lambda args, console: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        main(["list"])


def test_a_sigterm_passes_through_a_librarys_catch_all(monkeypatch, capsys) -> None:
    """Warp's kernel parser runs `try: ... except Exception: pass`, and elsewhere re-raises an
    exception as `type(error)(message)`: a SIGTERM landing there during start-up must still stop
    the run (status 143, one line), as Ctrl-C does, not be swallowed or lose its signal number."""
    import os
    import signal

    import phalanx.cli

    def parse_kernel(args, console) -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises here, on this thread
        except Exception:  # noqa: BLE001, S110 (a library's catch-all, as Warp's codegen has)
            pass

    monkeypatch.setattr(phalanx.cli, "list_tasks", parse_kernel)
    assert main(["list"]) == 143
    assert capsys.readouterr().err.strip() == "phalanx list: stopped by SIGTERM"
