"""Values between PostgreSQL and a `QueryResult/v1`: a parameter as psycopg sends it, a database
value as JSON, the encoded size of rows, and a column's type in PostgreSQL's own spelling.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from datetime import time as dtime
from decimal import Decimal
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

# PostgreSQL's own spelling (`format_type`) of the types psycopg names by their catalog name.
_TYPE_NAMES = {"int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
               "float8": "double precision", "bool": "boolean", "timestamptz": "timestamp with time zone",
               "timestamp": "timestamp without time zone", "varchar": "character varying", "bpchar": "character",
               "timetz": "time with time zone", "time": "time without time zone"}


def adapt(value: Any) -> Any:
    """A JSON parameter as psycopg should send it: objects as jsonb, everything else as itself."""
    if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
        return Jsonb(value)
    return value


def json_safe(value: Any) -> Any:
    """A database value as JSON: ids and instants as strings, as the seed's examples show them."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2 ** 53 else (
            float(value) if value.is_finite() else str(value))
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (date, dtime)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return _iso_duration(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    return str(value)


def _iso_duration(value: timedelta) -> str:
    seconds = value.total_seconds()
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    days, rest = divmod(seconds, 86_400)
    return f"{sign}P{int(days)}DT{rest:g}S"


def encoded_size(rows: Sequence[Any]) -> int:
    """JSON-encoded size in bytes of the returned rows (`returned_byte_count`)."""
    return len(json.dumps(list(rows), separators=(",", ":"), ensure_ascii=False).encode())


def row_size(row: list[Any]) -> int:
    return len(json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode())


def type_name(conn: psycopg.Connection, oid: int) -> str:
    info = conn.adapters.types.get(oid)
    if info is None:
        return "unknown"
    if oid == info.array_oid:
        return f"{_TYPE_NAMES.get(info.name, info.name)}[]"
    return _TYPE_NAMES.get(info.name, info.name)
