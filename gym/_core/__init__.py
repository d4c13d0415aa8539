"""The small utilities every layer may use: layer 1, the bottom of gym's layers.

Errors and the shared models (tasks, tool calls, verdicts), tool specs and argument
limits, HTTP, paths and the data folder, caches, file trees, the version, phases, git,
leaving a process, start-up, progress lines and text cleaning. Nothing here imports from
another package of gym; `gym.errors` is the public front door of its exception tree.
"""
