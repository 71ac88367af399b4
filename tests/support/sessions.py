"""A portal session opened straight in the store for a token (what signing in does), for tests
that read the portal as a role without going through the sign-in form."""

from __future__ import annotations

from typing import Any

from service.config import settings
from service.evaluation.permissions import access


def open_portal_session(factory: Any, token: str) -> str:
    """The secret of a new portal session of ``token``'s principal (the session cookie's value)."""
    with factory() as s:
        me = access.principal_for(s, f"Bearer {token}")
        secret = access.open_session(s, me.token_id, settings().web.session_cookie_lifetime)
        s.commit()
    return secret
