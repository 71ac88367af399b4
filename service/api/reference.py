"""docs/api.md's reference part, generated from the OpenAPI document and the error table.

``python -m service.api.reference`` rewrites the part of docs/api.md between the two marker
lines; a test fails when the file and the running schema disagree, so the docs cannot drift
from the API again.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from service.errors import ERROR_TABLE, INTERNAL

BEGIN = "<!-- BEGIN GENERATED: python -m service.api.reference -->"
END = "<!-- END GENERATED -->"
DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
METHODS = ("get", "post", "put", "patch", "delete")


def _body_fields(openapi: dict[str, Any], operation: dict[str, Any]) -> str:
    content = (operation.get("requestBody") or {}).get("content") or {}
    if "application/json" not in content:
        return ", ".join(f"`{m}` file" for m in content) if content else ""
    schema = content["application/json"].get("schema") or {}
    ref = schema.get("$ref", "")
    component = openapi["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {}) if ref else schema
    required = set(component.get("required", []))
    return ", ".join(f"`{name}`" + ("" if name in required else "?") for name in component.get("properties", {}))


def endpoint_table(openapi: dict[str, Any]) -> str:
    """One row per operation: method and path, operation id, summary, body fields, errors."""
    rows = ["| method and path | operation | what | body (`?` optional) | errors |", "| --- | --- | --- | --- | --- |"]
    for path, item in sorted(openapi["paths"].items()):
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            what = op.get("summary", "")
            description = (op.get("description") or "").strip().split("\n\n")[0].replace("\n", " ")
            errors = ", ".join(sorted(code for code in op.get("responses", {}) if code[0] in "45"))
            rows.append(f"| {method.upper()} {path} | `{op.get('operationId', '')}` | **{what}**: "
                        f"{description.replace('|', '/')} | {_body_fields(openapi, op)} | {errors} |")
    return "\n".join(rows)


def error_table() -> str:
    rows = ["| status | code | meaning |", "| --- | --- | --- |"]
    for cls, kind in sorted(ERROR_TABLE.items(), key=lambda kv: kv[1].status):
        doc = (cls.__doc__ or "").strip().split("\n")[0]
        rows.append(f"| {kind.status} | `{kind.code}` | {doc} |")
    rows.append(f"| {INTERNAL.status} | `{INTERNAL.code}` | A bug: the answer names a `request_id` that the "
                "server's log has with the traceback. |")
    return "\n".join(rows)


def generated(openapi: dict[str, Any]) -> str:
    return "\n\n".join([BEGIN, "### Errors", error_table(), "### Operations", endpoint_table(openapi), END])


def with_reference(text: str, openapi: dict[str, Any]) -> str:
    """``text`` (docs/api.md) with its generated part replaced by the current one."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + generated(openapi) + text[end:]


def current_openapi() -> dict[str, Any]:
    """The document the app serves (built on a throwaway in-memory database)."""
    from service.api.app import create_app

    app = create_app("sqlite://", lambda followups: None)
    return app.openapi_schema.to_schema()


def main() -> int:
    DOC.write_text(with_reference(DOC.read_text(), current_openapi()))
    print(f"wrote {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
