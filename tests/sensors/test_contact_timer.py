"""Air- and contact-time bookkeeping on scripted contact sequences, checked by hand."""

from __future__ import annotations

import pytest
import torch

from phalanx.sensors import ContactTimer

DT = 0.02


def _run(timer: ContactTimer, sequence: str) -> list[dict[str, float]]:
    """Feeds one body of env 0 a sequence of 'c' (50 N) and '.' (0 N); records the timers."""
    rows = []
    for symbol in sequence:
        force = torch.full((1, 1), 50.0 if symbol == "c" else 0.0)
        timer.update(force, DT)
        rows.append(
            {
                name: float(getattr(timer, name)[0, 0])
                for name in ("current_air_time", "current_contact_time", "last_air_time", "last_contact_time")
            }
            | {"first": bool(timer.first_contact(DT)[0, 0])}
        )
    return rows


def test_air_and_contact_phases_are_timed() -> None:
    # 3 steps in contact, 4 in the air, 2 in contact again. A phase is counted with the step that
    # ends it (Isaac Lab's convention): 3 contact steps make a 4-step contact phase.
    rows = _run(ContactTimer(1, 1, "cpu"), "ccc....cc")
    assert rows[2]["current_contact_time"] == pytest.approx(3 * DT)
    assert rows[3]["last_contact_time"] == pytest.approx(4 * DT) and rows[3]["current_air_time"] == pytest.approx(DT)
    assert rows[6]["current_air_time"] == pytest.approx(4 * DT) and rows[6]["last_air_time"] == 0.0
    assert rows[7]["last_air_time"] == pytest.approx(5 * DT), "set on landing"
    assert rows[7]["current_air_time"] == 0.0 and rows[7]["current_contact_time"] == pytest.approx(DT)
    assert rows[8]["last_air_time"] == pytest.approx(5 * DT), "kept until the next landing"
    assert [r["first"] for r in rows] == [True, False, False, False, False, False, False, True, False]


def test_threshold_and_reset_touch_only_their_targets() -> None:
    timer = ContactTimer(3, 2, "cpu", threshold=10.0)
    timer.update(torch.tensor([[5.0, 20.0], [20.0, 20.0], [0.0, 0.0]]), DT)  # 5 N is below the threshold
    assert timer.in_contact.tolist() == [[False, True], [True, True], [False, False]]
    timer.update(torch.zeros(3, 2), DT)
    timer.reset(torch.tensor([False, True, False]))
    assert timer.current_air_time[1].tolist() == [0.0, 0.0] and timer.last_contact_time[1].tolist() == [0.0, 0.0]
    assert timer.current_air_time[0].tolist() == pytest.approx([2 * DT, DT])
    assert timer.last_contact_time[0].tolist() == pytest.approx([0.0, 2 * DT])
    with pytest.raises(ValueError, match="threshold"):
        ContactTimer(1, 1, "cpu", threshold=-1.0)
