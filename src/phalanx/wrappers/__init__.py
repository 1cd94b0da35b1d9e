"""Adapters from phalanx envs to other RL libraries' env contracts (each needs its library:
`pip install -e ".[rsl-rl]"`, ...)."""
