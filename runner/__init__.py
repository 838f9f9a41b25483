"""Stage 2 (see ../shared/DESIGN.md): Snippet x Target -> Outcome.

Entry point: `runner.main.run(RunOptions)`; records in `runner.records`; targets (CPU builds,
existing environments, docker images) in `runner.targets`/`runner.envs`; one module per
tier concern (server start, probes, perf, log scanning, classification).
"""
