"""The web portal: server-rendered pages over the same use cases as the API (service.evaluation).

Reading needs no JavaScript: every chart is an inline SVG drawn on the server and every control
is a plain form. A little script (static/portal.js) adds conveniences: selectors submit on
change, the submission form checks a run file before it is sent, progress displays refresh.

Layout: ``app.py`` (the router, its dependencies and its error page), ``controllers/`` (one
Controller per family of pages), ``pages.py`` (rendering and the collection navigation, whose
every flag is a predicate of service.evaluation.permissions.policy), ``forms.py`` (sign-in cookie, CSRF,
posted forms), ``charts.py`` (matplotlib SVG), ``templates/`` and ``static/``.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

# The router is ``service.portal.app.portal_router``: this face imports nothing of the portal,
# so the controllers (which import its modules) and the face never import each other.
__all__ = ["STATIC", "TEMPLATES"]
