"""Metric names: one grammar, one canonical string, one registry.

Grammar::

    Name[']['(' param=value {, param=value} ')']['@' cutoff]

``Name`` starts with a letter and may hold letters, digits and ``_ + - #`` (``alpha-nDCG``,
``D#-nDCG``). ``value`` is a number, ``true``/``false``, a bare word (an enumerated choice such
as ``minRk``) or, for ``gains``, a level:gain mapping ``{1:1,2:5,3:10}``. The
parameter list is read with Python's ``ast`` module, never by splitting
strings. A trailing prime (``Q'``) is the paper's notation for the condensed
list and means ``judged_only=true``.

The canonical string omits every parameter at its default and lists the others
in alphabetical order: ``Q(beta=1)`` and ``Q`` are one metric, written ``Q``;
``nDCG(base=2)@10`` is ``nDCG@10``. That string is the key results are stored
under, so adding a metric needs no schema change. Equality and hashing go by it.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from service.errors import InvalidMeasure

GainsValue = tuple[tuple[int, float], ...]
ParamValue = bool | int | float | str | GainsValue


@dataclass(frozen=True)
class Param:
    """A declared parameter: its kind, default and the values it accepts."""

    name: str
    kind: str  # "bool" | "int" | "float" | "choice" | "gains"
    default: ParamValue | None
    doc: str
    choices: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None  # returns an error text or None

    def coerce(self, raw: Any, metric: str) -> ParamValue:
        value: ParamValue
        if self.kind == "bool":
            if not isinstance(raw, bool):
                raise InvalidMeasure(f"{metric}: {self.name} takes true or false, not {raw!r}")
            value = raw
        elif self.kind == "int":
            if (isinstance(raw, bool) or not isinstance(raw, (int, float)) or not _finite(raw)
                    or float(raw) != int(raw) or abs(int(raw)) > 2**31):
                raise InvalidMeasure(f"{metric}: {self.name} takes an integer, not {raw!r}")
            value = int(raw)
        elif self.kind == "float":
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not _finite(raw):
                raise InvalidMeasure(f"{metric}: {self.name} takes a number, not {raw!r}")
            value = _number(float(raw))
        elif self.kind == "choice":
            if raw not in self.choices:
                raise InvalidMeasure(f"{metric}: {self.name} is one of {', '.join(self.choices)}, not {raw!r}")
            value = raw
        elif self.kind == "gains":
            value = _coerce_gains(raw, metric)
        else:  # pragma: no cover - declarations are ours
            raise AssertionError(self.kind)
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise InvalidMeasure(f"{metric}: {self.name} {problem}")
        return value


def _finite(x: int | float) -> bool:
    try:
        return math.isfinite(float(x))
    except OverflowError:  # an int too large for a float
        return False


def _number(x: float) -> int | float:
    """Integral floats become ints so that beta=10 and beta=10.0 are one metric."""
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _coerce_gains(raw: Any, metric: str) -> GainsValue:
    if not isinstance(raw, dict) or not raw:
        raise InvalidMeasure(f"{metric}: gains takes a mapping level:gain such as {{1:1,2:5,3:10}}")
    items: list[tuple[int, float]] = []
    for level, gain in raw.items():
        if isinstance(level, bool) or not isinstance(level, int) or level < 0 or level > 10_000:
            raise InvalidMeasure(f"{metric}: gains levels are integers from 0 to 10000, not {level!r}")
        if isinstance(gain, bool) or not isinstance(gain, (int, float)) or not _finite(gain) or gain < 0:
            raise InvalidMeasure(f"{metric}: the gain of level {level} must be a number >= 0, not {gain!r}")
        if level == 0:
            if gain != 0:
                raise InvalidMeasure(f"{metric}: level 0 means judged non-relevant; its gain must be 0")
            continue  # 0:0 is implied: one canonical string with or without it
        items.append((level, _number(float(gain))))
    if not items:
        raise InvalidMeasure(f"{metric}: gains needs at least one relevant level")
    return tuple(sorted(items))


def format_value(value: ParamValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "{" + ",".join(f"{lv}:{format_value(g)}" for lv, g in value) + "}"
    if isinstance(value, float):
        return repr(value)
    return str(value)


@dataclass(frozen=True)
class MetricDef:
    """A registered metric: its name, parameters, cutoff rule and kernel."""

    name: str
    kernel: Callable[..., Any]
    params: tuple[Param, ...]
    doc: str
    cutoff: str = "optional"  # "none" | "optional" | "required"
    #: True when the value lies in [0, 1] and is 1 for an ideal ranking.
    ideal_is_one: bool = False
    #: Binary metrics count levels >= rel as relevant; graded ones use gains. The families of
    #: ``OWN_EVALUATOR_FAMILIES`` are not kernels over ranked levels (``kernel`` refuses).
    family: str = "graded"
    #: The range of values the metric can take on any topic, whatever its parameters:
    #: ``UNIT`` [0, 1] or ``NON_NEGATIVE`` [0, inf) (counts, CG, DCG). A mean over topics and
    #: every honest interval of that mean lie in it too. None: [0, 1] when ``ideal_is_one``,
    #: else [0, inf).
    bounds: tuple[float, float] | None = None
    param_map: Mapping[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "param_map", {p.name: p for p in self.params})
        if self.bounds is None:
            object.__setattr__(self, "bounds", UNIT if self.ideal_is_one else NON_NEGATIVE)
        low, high = self.bounds  # type: ignore[misc]
        if not low < high or (self.ideal_is_one and not low <= 1.0 <= high):
            raise ValueError(f"metric {self.name}: bounds {self.bounds} do not hold its values")


#: Families whose metrics are not computed by ``kernel`` over the ranked lists of levels but
#: by an evaluator of their own, to which ``scoring.evaluate`` routes them: ``session``
#: (per session of queries), ``diversity`` (intent-aware judgments, ``service.metrics.diversity``),
#: ``sampled`` (the strata of a stratified sample, ``service.metrics.inferred_sampled``) and
#: ``rag`` (generated answers: nuggets and citation support, ``service.metrics.rag_scoring``;
#: ``evaluate`` refuses them).
OWN_EVALUATOR_FAMILIES = frozenset({"session", "diversity", "sampled", "rag"})

#: The two ranges metrics have: a share or normalised score, and an unbounded count or gain sum.
UNIT: tuple[float, float] = (0.0, 1.0)
NON_NEGATIVE: tuple[float, float] = (0.0, math.inf)


@dataclass(frozen=True)
class Measure:
    """A metric with its parameters: hashable, ordered by its canonical string."""

    name: str
    params: tuple[tuple[str, ParamValue], ...] = ()  # non-default only, sorted by name
    cutoff: int | None = None

    def __str__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{k}={format_value(v)}" for k, v in self.params) + ")"
        if self.cutoff is not None:
            text += f"@{self.cutoff}"
        return text

    def __repr__(self) -> str:
        return f"Measure({str(self)!r})"

    def __lt__(self, other: Measure) -> bool:
        return str(self) < str(other)

    @property
    def definition(self) -> MetricDef:
        return REGISTRY[self.name]

    @property
    def bounds(self) -> tuple[float, float]:
        """The smallest and largest values the metric can take (see ``MetricDef.bounds``)."""
        return bounds(self)

    def get(self, name: str) -> Any:
        """A parameter's value, its default when not given."""
        for k, v in self.params:
            if k == name:
                return v
        p = self.definition.param_map.get(name)
        return p.default if p is not None else None



def bounds(measure: Measure | str) -> tuple[float, float]:
    """The range of possible values of a metric (a :class:`Measure` or a metric name), e.g.
    ``(0.0, 1.0)`` for ``nDCG@10`` and ``(0.0, inf)`` for ``DCG@10``. Per-topic values, their
    mean and the bootstrap interval of the mean never leave it; a t interval can."""
    m = parse_measure(measure) if isinstance(measure, str) else measure
    low, high = m.definition.bounds  # type: ignore[misc]
    return (float(low), float(high))


REGISTRY: dict[str, MetricDef] = {}
# lower-cased alias -> (canonical name, implied parameters)
ALIASES: dict[str, tuple[str, dict[str, ParamValue]]] = {}


def register(defn: MetricDef, *aliases: str | tuple[str, dict[str, ParamValue]]) -> MetricDef:
    if defn.name in REGISTRY:
        raise ValueError(f"metric {defn.name} registered twice")
    REGISTRY[defn.name] = defn
    ALIASES[defn.name.lower()] = (defn.name, {})
    for alias in aliases:
        if isinstance(alias, tuple):
            ALIASES[alias[0].lower()] = (defn.name, alias[1])
        else:
            ALIASES[alias.lower()] = (defn.name, {})
    return defn


def make_measure(name: str, given: Mapping[str, Any], cutoff: int | None) -> Measure:
    """Validate parameters against the registry and build the canonical measure."""
    defn = REGISTRY.get(name)
    if defn is None:
        raise InvalidMeasure(unknown_metric_message(name))
    params: dict[str, ParamValue] = {}
    for key, raw in given.items():
        p = defn.param_map.get(key)
        if p is None:
            known = ", ".join(sorted(defn.param_map)) or "none"
            raise InvalidMeasure(f"{name} has no parameter {key!r} (its parameters: {known})")
        value = p.coerce(raw, name)
        if p.default is not None and value == p.default and type(value) is type(p.default):
            continue
        if p.default is not None and p.kind == "float" and float(value) == float(p.default):  # type: ignore[arg-type]
            continue
        params[key] = value
    if defn.cutoff == "none" and cutoff is not None:
        raise InvalidMeasure(f"{name} takes no cutoff")
    if defn.cutoff == "required" and cutoff is None:
        raise InvalidMeasure(f"{name} needs a cutoff, e.g. {name}@10")
    if "norm" in params and cutoff is None:
        raise InvalidMeasure(f"{name}: norm only changes the normaliser at a cutoff, "
                             f"e.g. {name}(norm={format_value(params['norm'])})@10")
    if cutoff is not None and cutoff < 1:
        raise InvalidMeasure(f"{name}: the cutoff must be a positive integer")
    return Measure(name=name, params=tuple(sorted(params.items())), cutoff=cutoff)


#: The longest metric name read (the width of the columns that store one). Checked before
#: anything else, so reading a name costs time and memory bounded by this length.
MAX_NAME_LENGTH = 200
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+#\-]*")  # '#' and '-': the D#-measures, alpha-nDCG
_WORD_VALUES = {"true": True, "false": False, "True": True, "False": False}


def parse_measure(text: str) -> Measure:
    """Parse a metric name into its canonical :class:`Measure`.

    >>> str(parse_measure("Q(beta=1)"))
    'Q'
    >>> str(parse_measure("nDCG(gains={1:1,2:5,3:10})@10"))
    'nDCG(gains={1:1,2:5,3:10})@10'
    """
    if len(text) > MAX_NAME_LENGTH:
        raise InvalidMeasure(f"a metric name has at most {MAX_NAME_LENGTH} characters; this one has {len(text)} "
                             f"(it starts {text[:40]!r})")
    shape = _shape(text)
    if shape is None:
        raise InvalidMeasure(f"cannot read metric name {text!r}: expected Name(param=value,...)@cutoff")
    word, prime, args, raw_cutoff = shape
    alias = ALIASES.get(word.lower())
    if alias is None:
        raise InvalidMeasure(unknown_metric_message(word))
    name, implied = alias
    given: dict[str, Any] = dict(implied)
    if prime:
        given["judged_only"] = True
    if args is not None and args.strip():
        given.update(_parse_args(args, text))
    cutoff: int | None = None
    if raw_cutoff is not None:
        raw = raw_cutoff.strip()
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
            raise InvalidMeasure(f"{text!r}: the cutoff after @ must be a positive integer, not {raw!r}")
        cutoff = int(raw)
    return make_measure(name, given, cutoff)


def _shape(text: str) -> tuple[str, bool, str | None, str | None] | None:
    """``Name[']['(' args ')']['@' cutoff]`` split into (name, prime, args, cutoff), or None.

    One pass, no backtracking: the args are what lies between the first "(" and the last ")"
    and the cutoff is what follows the last "@" after that ")"; blanks around the parts are
    allowed. The args are read by :func:`_parse_args`, the cutoff by the caller.
    """
    body = text.strip()
    m = _NAME.match(body)
    if m is None:
        return None
    word, rest = m.group(), body[m.end():]
    prime = rest.startswith("'")
    rest = (rest[1:] if prime else rest).lstrip()
    args: str | None = None
    if rest.startswith("("):
        close = rest.rfind(")")
        if close < 0:
            return None
        args, rest = rest[1:close], rest[close + 1:].lstrip()
    cutoff: str | None = None
    if rest:
        if not rest.startswith("@") or "@" in rest[1:] or not rest[1:].strip():
            return None
        cutoff = rest[1:]
    return word, prime, args, cutoff


def _parse_args(args: str, text: str) -> dict[str, Any]:
    try:
        tree = ast.parse(f"_({args})", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # (ValueError: a NUL character)
        raise InvalidMeasure(f"{text!r}: cannot read the parameters {args!r}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args:
        raise InvalidMeasure(f"{text!r}: parameters are written name=value")
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise InvalidMeasure(f"{text!r}: parameters are written name=value")
        if kw.arg in out:
            raise InvalidMeasure(f"{text!r}: {kw.arg} is given twice")
        out[kw.arg] = _literal(kw.value, text)
    return out


def _literal(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Name):
        return _WORD_VALUES.get(node.id, node.id)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                continue
            key = _literal(k, text)
            if key in out:
                raise InvalidMeasure(f"{text!r}: key {key!r} is given twice")
            out[key] = _literal(v, text)
        return out
    if isinstance(node, ast.Set) and not node.elts:
        return {}
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, MemoryError, RecursionError):
        raise InvalidMeasure(f"{text!r}: cannot read the value {ast.unparse(node)!r}") from None


def _signature(defn: MetricDef) -> str:
    params = ", ".join(f"{p.name}={format_value(p.default) if p.default is not None else '<' + p.kind + '>'}"
                       for p in defn.params)
    cut = {"none": "", "optional": "[@k]", "required": "@k"}[defn.cutoff]
    return f"{defn.name}{'(' + params + ')' if params else ''}{cut}  {defn.doc}"


def metric_listing() -> str:
    """Every registered metric with its parameters and their defaults, then each alias with the
    metric it stands for (what `cranfield metrics` prints)."""
    lines = [f"  {_signature(defn)}" for defn in sorted(REGISTRY.values(), key=lambda d: d.name.lower())]
    aliases = sorted(a for a, (n, _) in ALIASES.items() if a != n.lower())
    lines.append("Aliases (each is the metric after =):")
    lines += [f"  {a} = {_alias_target(a)}" for a in aliases]
    return "\n".join(lines)


def _alias_target(alias: str) -> str:
    """The canonical metric an alias names (``@k`` where the metric needs a cutoff)."""
    try:
        return str(parse_measure(alias))
    except InvalidMeasure:
        name, params = ALIASES[alias]
        inner = ", ".join(f"{k}={format_value(v)}" for k, v in params.items())
        return f"{name}{'(' + inner + ')' if inner else ''}@k"


def unknown_metric_message(name: str) -> str:
    """A short refusal: the closest known names with their parameters, and where the whole list is."""
    import difflib

    names = {d.name.lower(): d for d in REGISTRY.values()}
    names.update({a: REGISTRY[n] for a, (n, _) in ALIASES.items() if n in REGISTRY})
    close = difflib.get_close_matches(name.lower(), list(names), n=4, cutoff=0.6)
    shown = list(dict.fromkeys(names[c].name for c in close))
    lines = [f"unknown metric {name!r}."]
    if shown:
        lines.append("Did you mean:")
        lines += [f"  {_signature(REGISTRY[n])}" for n in shown]
    lines.append("Every metric and its parameters: `cranfield metrics`, and docs/definitions.md.")
    return "\n".join(lines)
