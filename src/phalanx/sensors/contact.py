"""Contact and air time per body (feet), from contact normal forces.

A body is in contact when its normal force exceeds `threshold`. Per env and body the timer keeps
how long the current contact or air phase has lasted and how long the last completed phase of
each kind lasted, as Isaac Lab's contact sensor does; legged rewards use it (feet air time:
reward steps that end an air phase longer than a threshold).
"""

from __future__ import annotations

import torch


class ContactTimer:
    """Phase timers of `num_bodies` bodies in `num_envs` envs, updated once per env step.

    Attributes, all (num_envs, num_bodies) on `device`:
      in_contact: bool, force > threshold at the last update.
      current_air_time, current_contact_time: seconds in the current phase (0 for the other kind).
      last_air_time: length of the last air phase, set when the body lands, kept until the next.
      last_contact_time: length of the last contact phase, set when the body lifts off.
    """

    def __init__(self, num_envs: int, num_bodies: int, device: torch.device | str, threshold: float = 1.0):
        if threshold < 0:
            raise ValueError(f"threshold: must be >= 0 N, got {threshold}")
        self.threshold = threshold
        shape = (num_envs, num_bodies)
        self.in_contact = torch.zeros(shape, dtype=torch.bool, device=device)
        self.current_air_time = torch.zeros(shape, device=device)
        self.current_contact_time = torch.zeros(shape, device=device)
        self.last_air_time = torch.zeros(shape, device=device)
        self.last_contact_time = torch.zeros(shape, device=device)

    def update(self, normal_force: torch.Tensor, dt: float) -> None:
        """Advances the timers by `dt` seconds given this step's normal forces (num_envs, num_bodies).
        The step that ends a phase counts toward it (Isaac Lab's convention, which its reward
        thresholds assume): n steps seen in contact make a contact phase of (n + 1) dt."""
        contact = normal_force > self.threshold
        landed = contact & (self.current_air_time > 0)  # after a timed air phase (not after a reset)
        lifted = ~contact & (self.current_contact_time > 0)
        self.last_air_time.copy_(torch.where(landed, self.current_air_time + dt, self.last_air_time))
        self.last_contact_time.copy_(torch.where(lifted, self.current_contact_time + dt, self.last_contact_time))
        self.current_air_time.copy_(torch.where(contact, 0.0, self.current_air_time + dt))
        self.current_contact_time.copy_(torch.where(contact, self.current_contact_time + dt, 0.0))
        self.in_contact.copy_(contact)

    def first_contact(self, dt: float) -> torch.Tensor:
        """Bodies that landed at the last update: in contact for no longer than one step."""
        return self.in_contact & (self.current_contact_time > 0) & (self.current_contact_time <= dt + 1e-6)

    def reset(self, mask: torch.Tensor) -> None:
        """Clears every timer of the envs where `mask` (num_envs,) is True."""
        m = mask[:, None]
        self.in_contact.masked_fill_(m, False)
        for timer in (self.current_air_time, self.current_contact_time, self.last_air_time, self.last_contact_time):
            timer.masked_fill_(m, 0.0)
