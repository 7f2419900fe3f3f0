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
from tests.budget import ALL, examples


@schemathesis.serializer(FRAME_MEDIA_TYPE)
def _frame_bytes(ctx: schemathesis.SerializationContext, value: object) -> bytes:
    """Frames are documented as binary strings: send whatever bytes were generated, as they are."""
    return value if isinstance(value, bytes) else str(value).encode()


schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(backend="numpy"))
if not ALL:
    # The coverage phase's cases (each field missing, of the wrong type, at its bounds: ~2,600 requests)
    # are built while the module is collected, 4–5 s of CPU in each of make test's three workers before
    # any test runs: make test-all runs them; make test the schema's examples and the generated requests
    # (valid and invalid: schemathesis' modes, both by default), examples(120, 25) an operation.
    schema.config.phases.update(phases=["examples", "fuzzing"])


WRITES = "/api/generate"  # each valid request writes 1 … 256 tokens with the decoder (32 by default, ~60 ms a token)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


@schema.exclude(path=WRITES).parametrize()
@settings(max_examples=examples(120, 25), deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
    case.call_and_validate(checks=CHECKS, timeout=120)  # a model's first request loads it


@schema.include(path=WRITES).parametrize()
@settings(max_examples=examples(120, 8), deadline=None, suppress_health_check=list(HealthCheck))
def test_writing_conforms_to_its_schema(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
    """POST /api/generate: 25 generated requests cost 5–50 s of CPU from one run to the next (how many
    tokens each valid one asks for); make test draws 8, make test-all 120."""
    case.call_and_validate(checks=CHECKS, timeout=120)  # the first call unpacks the decoder
