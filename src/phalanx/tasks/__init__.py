"""phalanx's own tasks, one module per family; each registers its tasks (env config, training
defaults, play variant) with `phalanx.register` when imported (`phalanx.training.registry` imports them)."""
