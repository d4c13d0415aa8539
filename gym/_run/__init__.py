"""Running episodes: layer 7, above the policies and the store.

The episode loop (`_rollout`), the local and Ray executors, the runner that plans, runs
and stores benchmarks, adaptive concurrency, regrading, validation of environments and
the replay policy that reads the store. The public front door is `gym.runs`.
"""
