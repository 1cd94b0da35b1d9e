"""The documentation site builds with every warning an error (links to files and anchors that do
not resolve, docstrings the API reference cannot render), and the README's links resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    api = (tmp_path / "site" / "reference" / "cfg" / "index.html").read_text()
    assert "phalanx.envs.cfg.TaskCfg" in api, "the reference is rendered from the docstrings"


def test_the_readme_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", text) if not t.startswith("http")]
    assert targets, "the README links into the docs"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, missing
