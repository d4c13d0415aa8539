"""Serving environments over the OpenEnv protocol (`gym serve`; front door `gym.serve`).

`_app` builds openenv-core's server for an environment id and runs it; `_environment`
is one session's environment; `_models` what crosses the wire; `_client` a typed
client. Only `_app` imports without openenv-core installed (the ``openenv`` extra):
the others need it at import.
"""
