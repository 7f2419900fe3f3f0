"""schemathesis against the app's own OpenAPI schema: generated requests never get a 5xx,
and every answer matches the documented status codes, media types and response schemas."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from app.frame import FRAME_MEDIA_TYPE
from app.main import create_app
from tests.budget import examples


@schemathesis.serializer(FRAME_MEDIA_TYPE)
def _frame_bytes(ctx: schemathesis.SerializationContext, value: object) -> bytes:
    """Frames are documented as binary strings: send whatever bytes were generated, as they are."""
    return value if isinstance(value, bytes) else str(value).encode()


schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(backend="numpy"))


@schema.parametrize()
@settings(max_examples=examples(120, 25), deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
    case.call_and_validate(
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
            negative_data_rejection,
        ],
        timeout=120,  # POST /api/generate's first call unpacks the decoder and may write 256 tokens
    )
