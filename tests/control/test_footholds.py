"""Terrain-aware footholds (`phalanx.control.footholds`) on hand-made ground."""

from __future__ import annotations

import pytest
import torch

from phalanx.control.footholds import FootholdSearchCfg, safe_footholds

CFG = FootholdSearchCfg(reach=0.15, spacing=0.05, flatness=0.02)


def gap(xy: torch.Tensor) -> torch.Tensor:
    """Two stones at z = 0 with a 0.3 m deep gap 10 cm wide between them, 0 <= x < 0.1."""
    x = xy[..., 0]
    return torch.where((x >= 0.0) & (x < 0.1), -0.3, 0.0)


def wide_gap(xy: torch.Tensor) -> torch.Tensor:
    """A 25 cm wide gap, 0 <= x < 0.25: level at its bottom, away from its edges."""
    x = xy[..., 0]
    return torch.where((x >= 0.0) & (x < 0.25), -0.3, 0.0)


def step_down(xy: torch.Tensor) -> torch.Tensor:
    """A 10 cm step down at x = 0."""
    return torch.where(xy[..., 0] < 0.0, 0.0, -0.1)


def test_a_foothold_in_a_gap_moves_to_the_nearest_spot_a_margin_off_both_stones_edges() -> None:
    asked = torch.tensor([[0.04, 0.3], [0.08, -0.2], [0.5, 0.0]])
    moved = safe_footholds(asked, gap, CFG)
    # x = -0.01 and 0.09 are in or 1 cm off the gap, -0.06 (0.1 m away) keeps 6 cm from the edge;
    # 0.08's nearest level spot past the gap is 0.18. y stays; a foothold on level ground stays.
    expected = torch.tensor([[-0.06, 0.3], [0.18, -0.2], [0.5, 0.0]])
    assert torch.allclose(moved, expected, atol=1e-6)
    assert (gap(moved) == 0.0).all()


def test_level_ground_between_higher_ground_on_both_sides_is_a_hole() -> None:
    moved = safe_footholds(torch.tensor([0.17, 0.0]), wide_gap, CFG)
    # 0.17 and 0.12 are level, 0.22 and 0.27 within the margin of the edge: 0.32 is the nearest safe.
    assert torch.allclose(moved, torch.tensor([0.32, 0.0]), atol=1e-6)


def test_the_foot_of_a_step_down_is_no_hole_and_an_edge_is_left_by_the_margin() -> None:
    asked = torch.tensor([[0.12, 0.0], [-0.02, 0.0], [0.03, 0.0]])
    moved = safe_footholds(asked, step_down, CFG)
    # 0.12 stays below the step; -0.02 (2 cm before the edge) goes back to -0.07; 0.03 on to 0.08.
    assert torch.allclose(moved, torch.tensor([[0.12, 0.0], [-0.07, 0.0], [0.08, 0.0]]), atol=1e-6)


def test_a_foothold_stays_where_no_spot_in_reach_is_safe_and_on_level_ground() -> None:
    def checkerboard(xy: torch.Tensor) -> torch.Tensor:  # 5 cm squares 10 cm apart in height
        return 0.1 * ((xy / 0.05).floor().sum(-1) % 2)

    asked = torch.tensor([[[0.012, 0.013], [1.013, 2.012]]])  # (B, k, 2), off the squares' edges
    assert torch.equal(safe_footholds(asked, checkerboard, CFG), asked)
    assert torch.equal(safe_footholds(asked, lambda xy: torch.zeros_like(xy[..., 0]), CFG), asked)


def test_a_search_without_room_is_refused() -> None:
    with pytest.raises(ValueError, match="spacing <= reach"):
        FootholdSearchCfg(reach=0.04, spacing=0.05)
