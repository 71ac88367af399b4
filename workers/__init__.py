"""Celery app and thin tasks: each takes ids and calls a use case of service.evaluation."""
