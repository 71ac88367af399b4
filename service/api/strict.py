"""JSON request bodies of exactly the declared types.

Litestar converts a decoded body to its schema leniently (``msgspec.convert(..., strict=False)``):
``0`` and ``"false"`` become ``False``, ``"5"`` becomes ``5``. A typed API says what it takes,
so :func:`strict_json_body` (the application's ``before_request``) decodes a JSON body once more
with msgspec in strict mode and refuses a value of another type as any schema mismatch is
refused: ``invalid_request`` (422), naming the field (``topics_revealed: Expected `bool`, got
`int```). A body that is not JSON at all is left to Litestar's own refusal.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request
from litestar.enums import RequestEncodingType
from litestar.params import BodyKwarg

from service.errors import InvalidRequest


async def strict_json_body(request: Request[Any, Any, Any]) -> None:
    """Refuse a JSON body whose values are not of their declared types (422 naming the field)."""
    field = request.route_handler.parsed_data_field
    if field is None:
        return
    kwarg = field.kwarg_definition
    if isinstance(kwarg, BodyKwarg) and kwarg.media_type != RequestEncodingType.JSON:
        return  # a form (the portal's) or a file: its own rules
    body = await request.body()
    if not body.strip():
        return
    try:
        msgspec.json.decode(body, type=field.annotation, strict=True)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).rpartition(" - at `")
        path = where.rstrip("`").removeprefix("$").lstrip(".")
        raise InvalidRequest(f"{path}: {message}" if message and path else (message or str(exc))) from None
    except msgspec.DecodeError:
        return  # not JSON: Litestar answers it as before
