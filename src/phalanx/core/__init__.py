"""Layer 0: what every other package may use and which uses nothing of phalanx above it: errors
(one-line `ConfigError`s and checks), files (atomic writes, disk-full and path checks), lazy
imports, devices, torch.compile's helpers (compiling), Warp's start and streams (warp_cache,
warp_streams), configs as plain data (cfg_data), stops by signal outside training (stops), and
vec_env: the one env contract every learner sees."""
