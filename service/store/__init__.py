"""The persistent store: models, engine and sessions. Knows nothing of HTTP or Celery."""
