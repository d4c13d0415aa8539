"""Serving environments over the OpenEnv protocol (`gym serve`; front door `gym.serve`).

`_app` builds openenv-core's server for an environment id and runs it; `_environment`
is one session's environment; `_models` what crosses the wire; `_client` a typed
client; `_limits` the bounds of a message. Only `_app` and `_limits` import without
openenv-core installed (the ``openenv`` extra): the others need it at import.
"""
