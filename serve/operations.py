"""The assured operations' catalogue and argument validation, as the seed specifies them.

Arguments are checked before anything runs; a failure is `422 {"detail": {"code":
"invalid_parameter", "message": ...}}` with the seed's messages. jsonschema checks the shapes;
the messages name the argument the way the seed does.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
from fastapi import HTTPException

from serve import models as m
from serve.retrieval.facts import MODE_INSTANTS

# What `GET /deployment` advertises; `remember mcp` lists a tool only when its version matches.
TOOL_VERSIONS = {"ingest": 1, "pipeline_readiness": 1, "delete_document": 1, "resolve_entity": 1,
                 "claims_and_sources_context": 2, "facts_context": 3, "combined_context": 4, "query_sql": 1,
                 "explain_sql": 1, "describe_query_space": 1, "search_query_space": 1, "list_saved_queries": 1,
                 "describe_saved_query": 1, "run_saved_query": 1}

_UUIDS = {"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": True, "minItems": 1}
_INSTANT = {"type": "string", "format": "date-time"}
TIME = {"oneOf": [{"type": "object", "properties": {"mode": {"const": mode}, **dict.fromkeys(instants, _INSTANT)},
                   "required": ["mode", *instants], "additionalProperties": False}
                  for mode, instants in MODE_INSTANTS.items()]}
_QUERY = {"type": "string", "minLength": 1, "maxLength": 8192}
_HOPS = {"type": "integer", "minimum": 1, "maximum": 2, "default": 1}
_PREDICATE = {"type": "string", "minLength": 1, "maxLength": 200}

SCHEMAS: dict[str, dict[str, Any]] = {
    "resolve_entity": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}},
                       "additionalProperties": False, "required": ["name"]},
    "claims_and_sources_context": {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {"query": _QUERY, "entity_ids": {**_UUIDS, "maxItems": 20},
                       "k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
                       "candidate_k": {"type": "integer", "minimum": 1, "maximum": 400, "default": 200},
                       # the instant the question is asked (default now): its "two weeks ago" is read against it
                       "asked_at": _INSTANT}},
    "facts_context": {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {"query": _QUERY, "entity_ids": {**_UUIDS, "maxItems": 19},
                       "k": {"type": "integer", "minimum": 1, "maximum": 30, "default": 15},
                       "evidence_per_fact": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
                       "hops": _HOPS, "predicate": _PREDICATE, "time": TIME}},
    "combined_context": {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {"query": _QUERY, "entity_ids": {**_UUIDS, "maxItems": 19}, "hops": _HOPS,
                       "predicate": _PREDICATE, "time": TIME}},
}

# The operations `POST /operations/{name}` runs.
NAMES: tuple[str, ...] = tuple(SCHEMAS)

_CATALOGUE = {
    # name: (description, result_contract, output_grain, answer_intent, version, plan hash)
    "resolve_entity": ("Resolve a name to ranked current survivor candidates; never silently guess.", "envelope",
                       "fact", "identity", 1, "fcf8f8bd08efe28d62af572dbd4f81601b03f1744d993021225454b55748059a"),
    "claims_and_sources_context": (
        "What the sources said about a question: claims and passages, fused from semantic and keyword search, "
        "confirmed against the authority.", "envelope", "evidence", "claims_and_sources", 2,
        "cb897d871de908ee47b4bd80b313cf3b1df86c6e6d2a83882c3c3c3320ce4278"),
    "facts_context": (
        "What the memory holds true for a question, in a time mode, with evidence and every side of a "
        "contradiction.", "envelope", "fact", "facts", 3,
        "88264ee8ce445d7145b6138e8ea97e9c91d441512816186d5d064519499e339f"),
    "combined_context": (
        "Claims and sources, and facts, for one question in one bundle.", "context_bundle_v2", None,
        "combined_context", 4, "d9e9b28cfdf398658459e17839e8f732437c5514aa9927d4f622d9d5175d0f10"),
}


def descriptors() -> list[m.ToolDescriptor]:
    out = []
    for name, (description, contract, grain, intent, version, plan) in _CATALOGUE.items():
        result = m.ContextBundle if contract == "context_bundle_v2" else m.Envelope
        out.append(m.ToolDescriptor(
            name=name, description=description, input_schema=SCHEMAS[name],
            result_schema=result.model_json_schema(by_alias=True), result_contract=contract, output_grain=grain,
            answer_intent=intent, mutates=False, version=version, implementation_plan_hash=plan))
    return out


def _invalid(message: str) -> HTTPException:
    return HTTPException(422, {"code": "invalid_parameter", "message": message})


@functools.cache
def _validator(name: str, key: str) -> jsonschema.protocols.Validator:
    """One checked validator per argument: `jsonschema.validate` checks the schema itself on every
    call, which cost more than the rest of argument handling."""
    spec = SCHEMAS[name]["properties"][key]
    cls = jsonschema.validators.validator_for(spec)
    cls.check_schema(spec)
    return cls(spec, format_checker=jsonschema.FormatChecker())


def validate(name: str, arguments: Any) -> dict[str, Any]:
    """The arguments with defaults filled in, or the seed's 422."""
    schema = SCHEMAS[name]
    if not isinstance(arguments, dict):
        raise _invalid("arguments must be a JSON object")
    unknown = sorted(set(arguments) - set(schema["properties"]))
    if unknown:
        raise _invalid(f"unknown argument(s): {', '.join(unknown)}")
    for key in schema["required"]:
        if key not in arguments:
            raise _invalid(key)
    args = dict(arguments)
    for key, value in list(args.items()):
        spec = schema["properties"][key]
        if spec.get("type") == "integer" and isinstance(value, float) and value.is_integer():
            args[key] = value = int(value)  # the seed accepts whole-number floats
        if spec.get("type") == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            raise _invalid(f"invalid {key}: must be an integer")
        try:
            _validator(name, key).validate(value)
        except jsonschema.ValidationError as err:
            bound = {"maxLength", "minLength", "maximum", "minimum", "maxItems", "minItems", "uniqueItems"}
            if err.validator in bound:
                raise _invalid(f"{key} violates {err.validator}={err.validator_value}") from err
            raise _invalid(f"invalid {key}: {err.message}") from err
    if name == "claims_and_sources_context" and args.get("candidate_k", 200) < args.get("k", 50):
        raise _invalid("candidate_k cannot be smaller than k")
    for key, spec in schema["properties"].items():
        if key not in args and "default" in spec:
            args[key] = spec["default"]
    return args
