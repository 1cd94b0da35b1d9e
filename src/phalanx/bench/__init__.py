"""phalanx bench: throughput breakdowns, env-count sweeps, telemetry and reports."""
