"""Training, the app: `TrainCfg` and the task registry, the run (`run_training`), phalanx's trainer
loop, the run directory (checkpoints, metrics, logger), play and export, and the runs of the other
RL libraries on phalanx's envs. The only package that puts the registry, envs, the learner (`rl`)
or a library, and `dist` together."""
