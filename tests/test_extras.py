"""Every `pip install -e ".[EXTRA]"` the README, the docs and phalanx's messages print names an
extra of pyproject.toml, spelled as every pip accepts it: pip 23.2 (a fresh venv's) matches a
requested extra against the normalized names in the package's metadata without normalizing the
request, so `.[rsl_rl]` installs nothing there while `.[rsl-rl]` works."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 685


def test_every_extra_a_user_is_told_to_install_exists_under_its_normalized_name() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert all(name == _normalized(name) for name in extras), sorted(extras)
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "src").rglob("*.py"))]
    told = {
        (path.name, extra)
        for path in texts
        for group in re.findall(r"pip install[^\n`]*?\.\[([A-Za-z0-9_,.-]+)\]", path.read_text())
        for extra in group.split(",")
    }
    assert {"rsl-rl", "rl-games", "export"} <= {extra for _, extra in told}
    wrong = sorted((where, extra) for where, extra in told if extra not in extras)
    assert not wrong, f"extras that pip 23.2 would not install: {wrong}"
