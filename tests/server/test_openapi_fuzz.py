"""Requests generated from the app's own OpenAPI schema with Hypothesis: no 5xx, ever.

Each example picks an operation and builds a request from its parameters and body
schema: mostly valid values (so the engine itself is exercised), sometimes values
outside the schema (wrong types, missing or unknown fields, out-of-range numbers, texts
with NUL bytes or lone surrogates, odd times), and sometimes the id of a memory that
exists. Bounded and reproducible: a fixed seed, derandomised, 100 examples per backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from langmem_tiers import TieredMemoryStore
from langmem_tiers.server import ApiKeys, create_app

EXAMPLES = 100
SCOPE = "fuzz-agent"

_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", "\x00", "a\x00b", "\ud800", "x\udfffy", "memory.created", "agent-a", " ", "é" * 3]
    ),
)
_PLAIN = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")


def _any_json(hostile: bool) -> st.SearchStrategy[Any]:
    text = _TEXT if hostile else st.text(_PLAIN, max_size=20)
    leaf = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        text,
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)
        ),
        max_leaves=8,
    )


_ANY_JSON = _any_json(True)
_TIMES = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    st.sampled_from(
        ["2026-03-01T12:00:00Z", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "soon"]
    ),
)


@dataclass
class Served:
    client: TestClient
    headers: dict[str, str]
    memory_ids: list[str]


@pytest.fixture
def served(store_url: str) -> Iterator[Served]:
    with TieredMemoryStore.from_url(store_url) as store:
        key = ApiKeys(store.db).create(scope=SCOPE).key
        headers = {"Authorization": f"Bearer {key}"}
        with TestClient(create_app(store, max_body_bytes=64_000)) as client:
            # Memories to find, update and forget, so requests reach more than 404s.
            ids = [
                client.post(
                    "/api/v1/memory/semantic",
                    json={"content": f"Fact number {i} about the launch"},
                    headers=headers,
                ).json()["memory"]["id"]
                for i in range(3)
            ]
            yield Served(client, headers, ids)


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"][name]
    return schema


def from_schema(
    schema: dict[str, Any], spec: dict[str, Any], hostile: bool = False
) -> st.SearchStrategy[Any]:
    """Values for a JSON schema (the subset FastAPI emits): valid ones, or with
    ``hostile`` texts that no backend can store half of the time."""
    schema = _resolve(schema, spec)

    def inner(sub: dict[str, Any]) -> st.SearchStrategy[Any]:
        return from_schema(sub, spec, hostile)

    if "anyOf" in schema:
        return st.one_of([inner(s) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "string":
        if schema.get("format") == "date-time":
            return _TIMES
        low, high = schema.get("minLength", 0), schema.get("maxLength", 60)
        fitting = st.text(_PLAIN, min_size=low, max_size=min(high, 60))
        # One field in a few hostile: the others stay valid, so the request gets deep.
        return st.one_of(fitting, fitting, fitting, _TEXT) if hostile else fitting
    if kind == "integer":
        low, high = schema.get("minimum", -1000), schema.get("maximum", 1000)
        return st.integers(low - 2, high + 2)
    if kind == "number":
        return st.floats(-2, 2, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(inner(schema.get("items", {})), max_size=3)
    if kind == "object":
        properties = schema.get("properties", {})
        if not properties:
            return st.dictionaries(
                _TEXT if hostile else st.text(_PLAIN), _any_json(hostile), max_size=3
            )
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: inner(v) for k, v in properties.items() if k in required},
            optional={k: inner(v) for k, v in properties.items() if k not in required},
        )
    return _any_json(hostile)


def _mutate(value: Any) -> st.SearchStrategy[Any]:
    """Something a client might send instead of a valid body."""
    options: list[st.SearchStrategy[Any]] = [_ANY_JSON]
    if isinstance(value, dict) and value:
        options.append(st.sampled_from(sorted(value)).map(lambda k: {**value, k: None}))
        options.append(
            st.sampled_from(sorted(value)).map(lambda k: {x: value[x] for x in value if x != k})
        )
        options.append(st.just({**value, "unexpected_field": 1}))
    return st.one_of(options)


_SPEC = create_app("sqlite:///:memory:").openapi()
_OPERATIONS = sorted(
    (method.upper(), path, operation)
    for path, operations in _SPEC["paths"].items()
    for method, operation in operations.items()
)


def _quote(text: str) -> str:
    # Lone surrogates go out as the (invalid UTF-8) bytes they stand for, as a raw
    # client could send them.
    return quote(text, safe="", errors="surrogatepass")


def _agent_id() -> st.SearchStrategy[str | None]:
    # Mostly the key's own scope (or none), so requests get past the scope check.
    return st.sampled_from([None, None, None, SCOPE, "someone-else", "\x00"])


@st.composite
def requests(draw: st.DrawFn, memory_ids: list[str]) -> dict[str, Any]:
    method, path, operation = draw(st.sampled_from(_OPERATIONS))
    hostile = draw(st.booleans())
    params: dict[str, Any] = {}
    for parameter in operation.get("parameters", []):
        name, where = parameter["name"], parameter["in"]
        if where == "path" and name == "agent_id":
            # Mostly the key's own agent, so requests get past the scope check.
            raw = draw(st.sampled_from([SCOPE, SCOPE, SCOPE, "someone-else"]))
            path = path.replace("{agent_id}", _quote(raw))
        elif where == "path":
            raw = draw(
                st.one_of(
                    st.sampled_from(memory_ids), from_schema(parameter["schema"], _SPEC, hostile)
                )
            )
            text = str(raw) or "x"
            path = path.replace("{" + name + "}", _quote(text))
        elif where == "query" and draw(st.booleans()):
            value = draw(_agent_id()) if name == "agent_id" else None
            if name != "agent_id":
                value = draw(from_schema(parameter["schema"], _SPEC, hostile))
            if value is not None:
                params[name] = value
    query = urlencode(params, doseq=True, quote_via=lambda v, *_: _quote(str(v)))
    request: dict[str, Any] = {"method": method, "url": f"{path}?{query}" if query else path}
    body_spec = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body_spec is not None:
        body = draw(from_schema(body_spec["schema"], _SPEC, hostile))
        if isinstance(body, dict) and "memory_id" in body and draw(st.booleans()):
            body["memory_id"] = draw(st.sampled_from(memory_ids))
        if isinstance(body, dict) and "agent_id" in body:
            body["agent_id"] = draw(_agent_id())
        if draw(st.integers(0, 3)) == 0:
            body = draw(_mutate(body))
        request["content"] = json.dumps(body, ensure_ascii=True).encode()
    return request


def test_the_schema_covers_every_route() -> None:
    assert len(_OPERATIONS) == 18


@seed(20261121)
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_requests_never_get_a_server_error(served: Served, data: st.DataObject) -> None:
    request = data.draw(requests(served.memory_ids))
    headers = {**served.headers, "Content-Type": "application/json"}
    response = served.client.request(headers=headers, **request)
    described = f"{request['method']} {request['url']} {request.get('content', b'')[:300]!r}"
    assert response.status_code < 500, f"{described} -> {response.status_code} {response.text}"
    assert response.headers["content-type"].startswith("application/json"), described
    if response.status_code >= 400:
        body = response.json()
        assert set(body) >= {"error", "message"}, described
        assert "Traceback" not in response.text
