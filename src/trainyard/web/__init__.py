"""The web app: REST API under /api and the browser pages, built by ``create_app(settings)``."""
