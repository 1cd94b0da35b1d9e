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


def test_every_task_has_its_section_and_its_videos_exist() -> None:
    from phalanx.training.registry import registered_tasks

    pages = sorted((ROOT / "docs" / "tasks").glob("*.md"))
    headings = " ".join(line for page in pages for line in page.read_text().splitlines() if line.startswith("## "))
    builtin = [name for name, spec in registered_tasks().items() if spec.module.startswith("phalanx.tasks.")]
    missing = [name for name in builtin if not re.search(rf"[ ,]{re.escape(name)}(?=[ ,]|$)", headings)]
    assert builtin and not missing, f"tasks without a section on docs/tasks/: {missing}"
    for page in pages:
        for src in re.findall(r'<video src="([^"]+)"', page.read_text()):
            assert (page.parent / src).is_file(), f"{page.name}: {src}"
