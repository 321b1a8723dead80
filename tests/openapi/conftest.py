"""The openapi tests use the shared fixtures (tests/fixtures: a real Celery worker, people and listings)."""
