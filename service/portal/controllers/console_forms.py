"""The settings form of the organisers' console, generated from the API's typed schema.

Every field of :class:`~service.api.schemas.collections.CollectionSettings` (and of its nested
``Evaluation``, ``Significance`` and ``Level``) becomes a form control: a choice among a
``Literal``'s values is a selector, a bool a checkbox, a number a number field with the
schema's bounds, a list of ids or metrics a text area, a time a UTC date-time field, the
relevance levels rows of level, label and gain. A setting added to the schema therefore
appears in the form by itself (and ``tests/integration/test_console.py`` checks that every
field has its control). A posted form is read back into the API's shape and validated by the
same schema (:func:`read`), so the portal refuses what the API refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec
import msgspec.inspect as mi

from service.api.schemas.collections import CollectionSettings, CollectionUpdate
from service.errors import BadRequest
from service.evaluation.organising import collections
from service.portal.forms import PostedForm

# evaluation.hidden_topics has one control with the API's shorthand (the split is set in one place)
ALIASES = {"evaluation.hidden_topics": "hidden_topics"}
LEVEL_ROWS = 4  # empty rows offered below the configured levels (without JavaScript, no row is added)
LABELS = {"description": "Description", "official_metric": "Official metric", "metrics": "Metrics",
          "levels": "Relevance levels and gains", "evaluation": "Evaluation", "significance": "Significance test",
          "hidden_topics": "Hidden topics (public/private split)", "visibility": "Visibility",
          "enrolment": "Enrolment", "submission_opens_at": "Submissions open (UTC)",
          "submission_closes_at": "Submissions close (UTC)", "daily_run_quota": "Daily run quota per team",
          "leaderboard_released": "Board released", "topics_revealed": "Hidden topics revealed",
          "order": "Order of a run's list", "missing": "A topic the run misses",
          "no_relevant": "A topic without relevant documents", "depth": "Evaluation depth",
          "max_level": "Highest relevance level", "test": "Test", "resamples": "Resamples (B)",
          "alpha": "Significance level (alpha)", "correction": "Multiple-comparison correction", "seed": "Seed",
          "max_resamples": "Most resamples per pair (sequential rule)",
          "level": "Level", "label": "Label", "gain": "Gain", "significance.metrics": "Metrics tested"}
# The form's own wording where the schema's (written for the API: "null") does not fit a form.
HELP = {"hidden_topics": "Topic ids (one per line) scored for the organisers only until the split is revealed.",
        "evaluation.depth": "Documents per topic evaluated; empty: all.",
        "evaluation.max_level": "The highest relevance level; empty: the highest judged.",
        "significance.metrics": "One per line; empty: the official metric only.",
        "submission_opens_at": "UTC; empty: open now.", "submission_closes_at": "UTC; empty: never closes.",
        "daily_run_quota": "Valid runs a team may submit per UTC day; empty: no limit."}


@dataclass
class Control:
    """One form control of a setting: ``name`` is its dotted path in the settings (the posted
    field's name), ``kind`` text | textarea | select | checkbox | number | datetime | list |
    group (nested settings: ``children``) | rows (the levels: ``children`` per row)."""

    name: str
    label: str
    kind: str
    help: str = ""
    options: tuple[Any, ...] = ()
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    step: str = "1"
    max_length: int | None = None
    children: list[Control] = field(default_factory=list)

    @property
    def id(self) -> str:
        return "s-" + self.name.replace(".", "-")


def _unwrap(t: Any) -> tuple[Any, str, bool]:
    """The type without its documentation and its null/unset alternatives: (type, help, nullable)."""
    help_, nullable = "", False
    while True:
        if isinstance(t, mi.Metadata):
            help_ = help_ or (t.extra_json_schema or {}).get("description", "")
            t = t.type
        elif isinstance(t, mi.UnionType):
            rest = [a for a in t.types if not isinstance(a, mi.NoneType)]
            nullable = nullable or any(isinstance(a, mi.NoneType) for a in t.types)
            if len(rest) != 1:
                raise TypeError(f"no form control for {t}")
            t = rest[0]
        else:
            return t, help_, nullable


def _control(name: str, t: Any) -> Control:
    t, help_, nullable = _unwrap(t)
    help_ = HELP.get(name, help_)
    label = LABELS.get(name) or LABELS.get(name.rsplit(".", 1)[-1], name)
    if isinstance(t, mi.StructType):
        return Control(name, label, "group", help_, children=[_control(f"{name}.{f.name}", f.type) for f in t.fields
                                                              if f"{name}.{f.name}" not in ALIASES])
    if isinstance(t, mi.ListType):
        item, _, _ = _unwrap(t.item_type)
        if isinstance(item, mi.StructType):  # the levels: a row of controls per level
            return Control(name, label, "rows", help_, children=[_control(f.name, f.type) for f in item.fields])
        return Control(name, label, "list", help_ or "One per line (or separated by spaces).", nullable=nullable)
    if isinstance(t, mi.LiteralType):
        return Control(name, label, "select", help_, options=t.values, nullable=nullable)
    if isinstance(t, mi.BoolType):
        return Control(name, label, "checkbox", help_)
    if isinstance(t, (mi.IntType, mi.FloatType)):
        low = t.ge if t.ge is not None else t.gt
        high = t.le if t.le is not None else t.lt
        return Control(name, label, "number", help_, nullable=nullable, minimum=low, maximum=high,
                       step="1" if isinstance(t, mi.IntType) else "any")
    if isinstance(t, mi.DateTimeType):
        return Control(name, label, "datetime", help_ or "UTC; empty: no limit.", nullable=nullable)
    if isinstance(t, mi.StrType):
        long = t.max_length is None or t.max_length > 1000
        return Control(name, label, "textarea" if long else "text", help_, max_length=t.max_length)
    raise TypeError(f"no form control for the setting {name} ({t})")


def controls() -> list[Control]:
    """The settings form's controls, in the schema's order."""
    return [_control(f.name, f.type) for f in mi.type_info(CollectionSettings).fields]


def control_names(items: list[Control] | None = None) -> set[str]:
    """The posted field names of the form's controls (a level row's as ``levels.0.level``)."""
    names: set[str] = set()
    for c in items if items is not None else controls():
        if c.kind == "group":
            names |= control_names(c.children)
        elif c.kind == "rows":
            names |= {f"{c.name}.0.{child.name}" for child in c.children}
        else:
            names.add(c.name)
    return names


# ------------------------------------------------------------------- values shown in the form
def shown_values(settings: dict[str, Any]) -> dict[str, Any]:
    """The current settings (``console.settings_of``) as the form's field values, by name."""
    values: dict[str, Any] = {}

    def put(prefix: str, doc: dict[str, Any]) -> None:
        for key, value in doc.items():
            if isinstance(value, dict):
                put(f"{prefix}{key}.", value)
            elif key == "levels":
                for i, lv in enumerate(value):
                    for k in ("level", "label", "gain"):
                        values[f"levels.{i}.{k}"] = _text(lv.get(k))
            elif isinstance(value, list):
                values[f"{prefix}{key}"] = "\n".join(map(str, value))
            elif isinstance(value, bool):
                values[f"{prefix}{key}"] = value
            elif key.startswith("submission_") and value:
                values[f"{prefix}{key}"] = datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%dT%H:%M")
            else:
                values[f"{prefix}{key}"] = _text(value)

    put("", {k: v for k, v in settings.items() if k != "config_version"})
    return values


def level_rows(values: dict[str, Any]) -> int:
    """How many level rows the form shows: the configured levels and a few empty ones."""
    used = {int(k.split(".")[1]) for k in values if k.startswith("levels.")}
    return (max(used) + 1 if used else 0) + LEVEL_ROWS


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ------------------------------------------------------------------- reading a posted form
def read(form: PostedForm) -> dict[str, Any]:
    """Every setting of the posted settings form in the API's shape, validated by the API's
    schema (a refusal names the field, as the API's 422 would)."""
    data = _read_group(form, controls(), "")
    # as the API's bodies leave defaults out: no tested metrics means the official one
    data["significance"] = {k: v for k, v in data["significance"].items() if v is not None}
    try:
        msgspec.convert(data, CollectionUpdate)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"the settings are not valid: {exc}") from None
    return data


def _read_group(form: PostedForm, items: list[Control], prefix: str) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for c in items:
        key = c.name[len(prefix):]
        if c.kind == "group":
            data[key] = _read_group(form, c.children, f"{c.name}.")
        elif c.kind == "rows":
            data[key] = _read_levels(form, c.name)
        else:
            value = _read_value(form, c)
            if value is not None or c.nullable or c.kind == "datetime":
                data[key] = value
    return data


def _read_value(form: PostedForm, c: Control) -> Any:
    text = form.fields.get(c.name, "")
    if c.kind == "checkbox":
        return text.strip() in ("1", "on", "true")
    text = text.strip()
    if c.kind == "list":
        items = [item for item in text.replace(",", " ").split() if item]
        return items or (None if c.nullable else [])
    if c.kind in ("text", "textarea"):
        return text
    if not text:
        return None
    if c.kind == "number":
        return _number(text, c)
    if c.kind == "datetime":
        when = collections.parse_time(text, f"{c.label} (YYYY-MM-DDTHH:MM, UTC)")
        assert when is not None  # text is not blank
        return when.isoformat()
    return text  # a selector's value (the schema checks it is one of the choices)


def _number(text: str, c: Control) -> int | float:
    try:
        return int(text) if c.step == "1" else float(text)
    except ValueError:
        raise BadRequest(f"{c.label} is a {'whole ' if c.step == '1' else ''}number, not {text[:40]!r}") from None


def _read_levels(form: PostedForm, name: str) -> list[dict[str, Any]]:
    """The level rows with a level (rows left empty are ignored), in the order of their levels."""
    rows = sorted({int(k.split(".")[1]) for k in form.fields if k.startswith(f"{name}.") and k.count(".") == 2
                   and k.split(".")[1].isdigit()})
    levels = []
    for i in rows:
        level = form.text(f"{name}.{i}.level")
        if not level:
            continue
        try:
            gain = form.text(f"{name}.{i}.gain")
            levels.append({"level": int(level), "label": form.text(f"{name}.{i}.label"),
                           "gain": float(gain) if gain else None})
        except ValueError:
            raise BadRequest(f"relevance level row {i + 1}: the level is a whole number and the gain a "
                             "number") from None
    return sorted(levels, key=lambda lv: lv["level"])


def changed(full: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The settings of ``full`` (a read form) that differ from ``current``
    (``console.settings_of``): what the update is given, so saving an untouched form changes nothing."""
    def level_key(levels: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((int(lv["level"]), lv.get("label") or "", None if lv.get("gain") is None
                       else float(lv["gain"])) for lv in levels)

    out: dict[str, Any] = {}
    for key, value in full.items():
        old = current.get(key)
        if key == "levels":
            same = level_key(value) == level_key(old or [])
        elif key == "significance":
            same = ({k: v for k, v in value.items() if v is not None}
                    == {k: v for k, v in (old or {}).items() if v is not None})
        elif key == "hidden_topics":
            same = sorted(set(value or [])) == sorted(set(old or []))
        else:
            same = value == old
        if not same:
            out[key] = value
    return out
