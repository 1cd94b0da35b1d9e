"""Distillation in PPO (`DistillCfg`, a teacher): the teacher's share of the actions, the losses of
both phases against hand computation, and what each phase trains."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from phalanx.core.errors import ConfigError
from phalanx.rl.cfg import DistillCfg, PPOCfg
from phalanx.rl.models import ActorCritic
from phalanx.rl.ppo import PPO, TEACHER_GROUP

OBS, TEACHER_OBS, ACTIONS, ENVS, STEPS = 3, 5, 2, 64, 4
VIEW = torch.randn(OBS, TEACHER_OBS, generator=torch.Generator().manual_seed(2))
"""How the teacher's observations see the state the student's see."""


def _ppo(distill: DistillCfg, algo: PPOCfg | None = None) -> tuple[PPO, nn.Module]:
    torch.manual_seed(0)
    policy = ActorCritic(OBS, OBS, ACTIONS, (16,), (16,), "elu", init_noise_std=0.5)
    teacher = nn.Linear(TEACHER_OBS, ACTIONS).requires_grad_(False)
    algo = algo or PPOCfg(num_mini_batches=1, num_learning_epochs=1)
    spec = {"policy": (OBS,), TEACHER_GROUP: (TEACHER_OBS,)}
    generator = torch.Generator().manual_seed(1)
    return PPO(policy, algo, spec, ENVS, STEPS, False, generator, distill=distill, teacher=teacher), teacher


def _observations() -> dict[str, torch.Tensor]:
    """Random states, seen by the student and (another view of the same state) by the teacher."""
    state = torch.randn(ENVS, OBS)
    return {"policy": state, TEACHER_GROUP: state @ VIEW}


def _rollout(ppo: PPO) -> None:
    """STEPS random steps: observations, actions, rewards; then the returns."""
    for t in range(STEPS):
        obs = _observations()
        ppo.act(obs, t)
        done = torch.zeros(ENVS, dtype=torch.bool)
        ppo.record(t, torch.randn(ENVS), done, done, obs)
    ppo.compute_returns({"policy": torch.randn(ENVS, OBS)})


def test_the_teacher_share_falls_linearly_to_zero() -> None:
    cfg = DistillCfg(iterations=10, teacher_mix=0.8, mix_iterations=4)
    assert [cfg.teacher_share(i) for i in range(6)] == pytest.approx([0.8, 0.6, 0.4, 0.2, 0.0, 0.0])


@pytest.mark.parametrize(
    ("fields", "flag"),
    [
        ({"iterations": 0}, "distill.iterations"),
        ({"coef": 0.0}, "distill.coef"),
        ({"teacher_mix": 1.5}, "distill.teacher_mix"),
        ({"iterations": 5, "mix_iterations": 6}, "distill.mix_iterations"),
        ({"fine_tune_coef": -1.0}, "distill.fine_tune_coef"),
    ],
)
def test_bad_settings_name_their_flag(fields: dict, flag: str) -> None:
    with pytest.raises(ConfigError) as error:
        DistillCfg(**fields).check()
    assert error.value.as_flag().startswith(f"--{flag.replace('_', '-')}")


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_a_step_takes_the_teachers_action_in_its_share_of_the_envs(share: float) -> None:
    """Share 1: every action is the teacher's; share 0: the student's own samples. The teacher's
    actions are stored either way, as the imitation loss's targets, and the log-probabilities are
    those of the actions taken."""
    ppo, teacher = _ppo(DistillCfg(iterations=2, teacher_mix=share, mix_iterations=1))
    ppo.begin_iteration(0)
    obs = _observations()
    actions = ppo.act(obs, 0)
    taught = teacher(obs[TEACHER_GROUP])
    torch.testing.assert_close(ppo.storage.teacher_actions[0], taught)
    same = (actions == taught).all(dim=1)
    assert bool(same.all()) if share == 1.0 else not bool(same.any())
    dist, _ = ppo.policy.distribution_and_value(obs["policy"], obs["policy"])
    torch.testing.assert_close(ppo.storage.log_probs[0], dist.log_prob(actions))


def test_the_losses_of_both_phases_by_hand() -> None:
    """Distilling: value_loss_coef * value loss + coef * mean((student mean - teacher action)^2);
    fine-tuning: PPO's loss + fine_tune_coef * the same imitation term."""
    distill = DistillCfg(iterations=1, coef=2.0, mix_iterations=1, fine_tune_coef=0.25)
    algo = PPOCfg(num_mini_batches=1, num_learning_epochs=1, value_loss_coef=0.7, entropy_coef=0.01)
    ppo, _ = _ppo(distill, algo)
    ppo.begin_iteration(0)
    _rollout(ppo)
    mb = ppo.storage.fields(ppo.storage.samples.view(STEPS * ENVS, -1))
    imitation = (ppo.policy.actor(mb["obs"]) - mb["teacher_actions"]).square().mean()
    loss, terms = ppo._minibatch_losses(mb)
    assert ppo.terms == ("surrogate", "value", "entropy", "kl", "distill")
    surrogate, value, entropy, _, logged = terms[:5]
    torch.testing.assert_close(logged, imitation.detach())
    torch.testing.assert_close(loss.detach(), 0.7 * value + 2.0 * imitation.detach())
    ppo.begin_iteration(1)
    assert not ppo.distilling
    loss, terms = ppo._minibatch_losses(mb)
    ppo_loss = surrogate + 0.7 * value - 0.01 * entropy
    torch.testing.assert_close(loss.detach(), ppo_loss + 0.25 * imitation.detach())


def test_distilling_trains_the_actor_toward_the_teacher_at_a_fixed_rate() -> None:
    """Updates while distilling lower the imitation loss, leave the standard deviation (the
    teacher's, which the student explores with) and keep the learning rate however far the
    actor moves; PPO's updates then adapt the rate again."""
    algo = PPOCfg(num_mini_batches=2, num_learning_epochs=4, learning_rate=3e-3, desired_kl=1e-4)
    ppo, _ = _ppo(DistillCfg(iterations=8, mix_iterations=1), algo)
    log_std = ppo.policy.log_std.detach().clone()
    losses = []
    for iteration in range(8):
        ppo.begin_iteration(iteration)
        _rollout(ppo)
        losses.append(float(ppo.update()["loss/distill"]))
        assert float(ppo.learning_rate) == pytest.approx(3e-3)
    assert losses[-1] < 0.5 * losses[0], losses
    torch.testing.assert_close(ppo.policy.log_std.detach(), log_std)
    ppo.begin_iteration(8)
    _rollout(ppo)
    ppo.update()
    assert float(ppo.learning_rate) != pytest.approx(3e-3)
    assert not torch.equal(ppo.policy.log_std.detach(), log_std)
