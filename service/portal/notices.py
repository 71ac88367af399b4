"""What a form's landing page says was done: every state-changing form of the portal answers.

A form posts, its handler redirects (303) to the page to show, and that page says what happened
in a notice at the top. The redirect names one of :data:`NOTICES` (``?notice=team-enrolled``) and
the values its sentence holds (``&team=gamma``). The sentences are fixed here, so a crafted
address can only ever show one of them; the values are shown as text (escaped), cut at
:data:`MAX_VALUE` characters. Pages that said what happened before this module (the console's
``done``, the settings' ``saved``, a submission's ``submitted`` ...) keep their own notices.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit, urlunsplit

MAX_VALUE = 200

#: notice key -> its sentence; ``{name}`` is a value carried in the address.
NOTICES: dict[str, str] = {
    "team-enrolled": "Team {team} is enrolled: its participants see this collection and submit runs to it.",
    "team-already": "Team {team} was enrolled already: nothing changed.",
    "team-created": "Team {team} is created and enrolled: create a token for its participants below.",
    "team-removed": "Team {team} is removed from this collection: its runs stay; its participants no longer "
                    "see the collection.",
    "self-enrolled": "Your team {team} is enrolled: you can submit runs and see your team's results.",
    "token-revoked": "Token {token} is revoked: it is refused from now on and its portal sessions are closed.",
    "own-token-revoked": "Token {token} is revoked. It was the token you signed in with, so you are signed out.",
    "primary-on": "Run {run} is marked as its team's primary run.",
    "primary-off": "Run {run} is no longer marked as its team's primary run.",
    "baseline-on": "Run {run} is marked as a baseline: the board marks it.",
    "baseline-off": "Run {run} is no longer marked as a baseline.",
    "assessor-assigned": "Assessor {token} now judges these topics of this collection: {topics}.",
    "pool-requested": "The pool is being built by the workers: it is listed below when it is done.",
    "reusability-requested": "The reusability analysis is being computed by the workers: it is shown below when "
                             "it is done.",
    "reduction-requested": "The reduced-judgment experiment is being computed by the workers: it is shown below "
                           "when it is done.",
    "snapshot-frozen": "Snapshot frozen: the board on every metric ({metrics}) as it is now; it never changes.",
    "topics-saved": "Topics saved: {new} new, {updated} updated, {unchanged} unchanged.",
    "signed-out": "You are signed out: the session is closed on the server.",
}

_FIELDS = {key: [f for _, f, _, _ in string.Formatter().parse(text) if f] for key, text in NOTICES.items()}


def answered(path: str, key: str, **values: object) -> str:
    """``path`` with the notice ``key`` and its values in its query (kept before any fragment)."""
    if key not in NOTICES:
        raise KeyError(f"no notice {key!r}")
    missing = set(_FIELDS[key]) - set(values)
    if missing:
        raise KeyError(f"notice {key!r} needs {', '.join(sorted(missing))}")
    parts = urlsplit(path)
    query = urlencode({"notice": key, **{k: str(values[k]) for k in _FIELDS[key]}})
    return urlunsplit(("", "", parts.path, f"{parts.query}&{query}" if parts.query else query, parts.fragment))


def notice_of(query: Mapping[str, str]) -> str | None:
    """The sentence an address's query asks for (None without one, or for an unknown key or a
    missing value: a notice is never made up)."""
    key = query.get("notice")
    if not key or key not in NOTICES:
        return None
    values = {}
    for name in _FIELDS[key]:
        value = query.get(name)
        if value is None:
            return None
        values[name] = value[:MAX_VALUE]
    return NOTICES[key].format(**values)
