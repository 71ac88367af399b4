"""Values as a person reads them (issue 27, item 3): no page prints ``None``, ``True``, a
Python dict or ``0 of 0 runs``. The templates call these as filters and functions
(``pages.configure_templates``); tests/integration/test_portal_raw_values.py crawls every page
for what slips through.

- :func:`shown`: any setting or detail value in words: yes/no, a phrase for "not set", a list
  joined, relevance levels with their labels and gains, a time in UTC;
- :func:`setting_changes`: a settings preview's changes, one line per setting that changes
  (nested settings such as the significance test's B each on their own line), with the
  settings form's labels;
- :func:`audit_details`: an audit event's details, without the empty ones;
- :func:`level_totals`: a qrels version's judgments per level (summed over its topics);
- :func:`job_summary`: where an evaluation job is, in words.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

MISSING = "–"

#: What an unset setting means, where "not set" would not say it (the API's ``null``).
UNSET = {"depth": "all documents", "max_level": "the highest judged", "submission_opens_at": "open now",
         "submission_closes_at": "never closes", "daily_run_quota": "no limit", "gain": "the level's value",
         "significance.metrics": "the official metric only", "official_metric": "none", "description": "none",
         "hidden_topics": "none", "metrics": "none", "levels": "as judged (gain = level)"}


def yes_no(value: Any) -> str:
    return "yes" if value else "no"


def when(value: Any, missing: str = MISSING) -> str:
    """An ISO time (or a datetime) as "YYYY-MM-DD HH:MM UTC"."""
    if not value:
        return missing
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    return value.strftime("%Y-%m-%d %H:%M") + " UTC"


def levels_text(levels: Iterable[Mapping[str, Any]]) -> str:
    """Relevance levels as "0 not relevant (gain 0), 1 relevant (gain 1)"."""
    parts = []
    for lv in levels:
        text = str(lv.get("level"))
        if lv.get("label"):
            text += f" {lv['label']}"
        if lv.get("gain") is not None:
            text += f" (gain {float(lv['gain']):g})"
        parts.append(text)
    return ", ".join(parts)


def shown(value: Any, key: str = "", limit: int = 200) -> str:
    """``value`` (of the setting or detail ``key``, a dotted path) in words."""
    name = key.rsplit(".", 1)[-1]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNSET.get(key) or UNSET.get(name) or "not set"
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        if name.endswith("_at") and value:
            return when(value)
        text = value if value else UNSET.get(key) or UNSET.get(name) or "none"
    elif isinstance(value, Mapping):
        text = "; ".join(f"{k.replace('_', ' ')}: {shown(v, f'{key}.{k}' if key else k)}" for k, v in value.items()
                         if v is not None) or "none"
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if items and all(isinstance(i, Mapping) and "level" in i for i in items):
            text = levels_text(items)
        else:
            text = ", ".join(shown(i) for i in items) or UNSET.get(key) or UNSET.get(name) or "none"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def setting_changes(changes: Iterable[Mapping[str, Any]], labels: Mapping[str, str]) -> list[dict[str, str]]:
    """A settings preview's changes (``console.preview_settings``: setting, old, new) as lines of
    label, group (the nested setting's, or ""), old and new in words: a group of settings (the
    evaluation, the significance test) gives a line per member that changes."""
    lines = []
    for change in changes:
        key, old, new = change["setting"], change.get("old"), change.get("new")
        label = labels.get(key, key.replace("_", " "))
        if isinstance(old, Mapping) or isinstance(new, Mapping):
            old, new = old or {}, new or {}
            members = [*old, *(k for k in new if k not in old)]
            for member in members:
                a, b = old.get(member), new.get(member)
                if a != b:
                    path = f"{key}.{member}"
                    lines.append({"setting": key, "label": labels.get(path) or labels.get(member, member),
                                  "group": label, "old": shown(a, path), "new": shown(b, path)})
        else:
            lines.append({"setting": key, "label": label, "group": "", "old": shown(old, key), "new": shown(new, key)})
    return lines


def audit_details(details: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """An audit event's details as (name, words), leaving out those with no value."""
    return [(k.replace("_", " "), shown(v, k)) for k, v in (details or {}).items() if v is not None and v != ""]


def level_totals(level_counts: Mapping[str, Mapping[str, int]] | None) -> list[tuple[int, int]]:
    """A qrels version's judgments per level over its topics (``level_counts``: topic -> level ->
    count), by level."""
    totals: dict[int, int] = {}
    for counts in (level_counts or {}).values():
        for level, n in counts.items():
            totals[int(level)] = totals.get(int(level), 0) + int(n)
    return sorted(totals.items())


def job_summary(job: Mapping[str, Any]) -> str:
    """Where an evaluation job is, in words: "evaluating: 3 of 15 runs", "running the
    significance tests (no run to re-evaluate)", "done: 15 runs evaluated"."""
    status, total = job.get("status"), int(job.get("total") or 0)
    failed = int(job.get("failed") or 0)
    handled = int(job.get("done") or 0) + failed
    runs = f"{handled} of {total} run{'s' if total != 1 else ''}"
    failures = f", {failed} failed" if failed else ""
    if status == "running":
        return f"evaluating: {runs}{failures}" if total else "starting"
    if status == "testing":
        if not total:
            return "running the significance tests (no run to re-evaluate)"
        return f"runs evaluated ({runs}{failures}); running the significance tests"
    if status == "done":
        if not total:
            return "done: the significance tests were run again (no run to re-evaluate)"
        return f"done: {runs} evaluated{failures}"
    if status == "failed":
        return f"failed after {runs}{failures}" if total else "failed"
    return str(status or "unknown")


def register(env: Any) -> None:
    """The filters and functions of this module in a Jinja environment."""
    env.filters.update(shown=shown, yes_no=yes_no, when=when, levels_text=levels_text, job_summary=job_summary)
    from service.portal.controllers.console_forms import LABELS  # the settings form's labels

    env.globals.update(setting_changes=lambda changes: setting_changes(changes, LABELS),
                       audit_details=audit_details, level_totals=level_totals)
