"""Environments core and registry: layer 4, above sandboxes and grading.

The Gymnasium environments over sandboxes (`_env`), their spaces and wrappers, the code
family's grading (`_code`) and its cheating panel (`_panel`), the registry of environment
ids, the scaffold of ``gym env new`` and split roles. The public front doors are
`gym.authoring` and, for code grading, `gym.grading`.
"""
