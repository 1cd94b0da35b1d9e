"""Shared test setup: quiet Warp, skip GPU tests without CUDA, small cached envs."""

from __future__ import annotations

import pytest
import torch
import warp as wp


def pytest_configure(config: pytest.Config) -> None:
    wp.config.log_level = wp.LOG_WARNING


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
