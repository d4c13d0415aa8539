"""PyFunc: write one Python function from a short specification (see README.md).

Declared in boxgym.toml alone: the code family (`gym.CodeEnv`) over seeds/pyfunc/.
"""
