"""PPO on device: actor-critic models, observation normalization, rollout storage, the trainer."""
