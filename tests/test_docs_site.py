"""The README's links resolve (.ci/run builds the documentation site with every warning an error:
links to files and anchors that do not resolve there)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", text) if not t.startswith("http")]
    assert targets, "the README links into the docs"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, missing
