"""Use cases shared by the CLI, the workers and the API: register, evaluate, test, read.

Imports the computation core and the store; never HTTP or Celery.
"""
