"""Importing datasets as tasks: layer 4, beside the environments.

A dataset record into a task's files (`_dataset`) and the importer that writes, checks
and indexes them (`_importer`). The public front door is `gym.datasets`.
"""
