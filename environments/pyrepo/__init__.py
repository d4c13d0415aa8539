"""PyRepo: resolve an issue in a small Python project (see README.md).

Declared in boxgym.toml alone: the code family (`gym.CodeEnv`) over seeds/pyrepo/.
"""
