"""Protobuf's binary wire format for our messages, without importing google.protobuf.

Owns: encoding a dataclass (or dict) as a message of proto/, and decoding a message's bytes into a
dict, from the field table scripts/gen_proto.py generates (_proto/fields.py). It exists so that
the short-lived CLIs' calls (sbatch's SubmitJob) skip google.protobuf's import (~30 ms at start);
everything else keeps the generated *_pb2 classes and wire.py.

Encoding follows proto3 as protobuf's own serializer does: a field with implicit presence is
not sent when it holds its default (0, 0.0, False, "", b""; -0.0 is sent); repeated numbers are
packed; a map entry is a nested message (key = 1, value = 2); int32, int64 and enums are sent as
two's complement in 64 bits (a negative number takes 10 bytes); sint* zigzag; double, fixed64
and sfixed64 as 8 bytes little-endian, float and (s)fixed32 as 4. Out-of-range integers raise
ValueError and values of the wrong type TypeError, as a message's setattr would.

A dataclass is read like wire.fill_msg reads it: the fields it shares with the message, None
skipped, an Enum as its value; an all-default nested dataclass is left unset (as fill_msg
leaves it), while a nested dict or any nested message given to encode_fields' caller through a
dict is sent even when empty (a message constructor's `Msg(spec=...)` sets it too).

Decoding returns a dict with every field of the message (defaults for those absent), nested
messages as dicts (None when absent), repeated fields as lists, maps as dicts; unknown fields
are skipped. Malformed bytes raise ValueError.
"""

from __future__ import annotations

import struct

from .._proto.fields import MESSAGES, METHODS, PACKAGE

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5  # wire types
_IMPLICIT, _REPEATED, _EXPLICIT = 0, 1, 2  # labels of fields.py
_DOUBLE, _FLOAT = struct.Struct("<d"), struct.Struct("<f")
_U64, _U32, _S64, _S32 = (struct.Struct(f) for f in ("<Q", "<I", "<q", "<i"))
_WIRE_TYPE = {**dict.fromkeys(("int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool",
                                "enum"), _VARINT),
              "double": _I64, "fixed64": _I64, "sfixed64": _I64,
              "float": _I32, "fixed32": _I32, "sfixed32": _I32,
              "string": _LEN, "bytes": _LEN, "message": _LEN, "map": _LEN}
_DEFAULTS = {"string": "", "bytes": b"", "double": 0.0, "float": 0.0, "bool": False}
_RANGE = {"int32": (-2**31, 2**31 - 1), "sint32": (-2**31, 2**31 - 1), "enum": (-2**31, 2**31 - 1),
          "sfixed32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "fixed32": (0, 2**32 - 1),
          "int64": (-2**63, 2**63 - 1), "sint64": (-2**63, 2**63 - 1),
          "sfixed64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1), "fixed64": (0, 2**64 - 1)}


def method_path(service: str, method: str) -> str:
    """The HTTP/2 :path of a unary method, /package.Service/Method."""
    if method not in METHODS.get(service, ()):
        raise KeyError(f"no unary method {service}.{method}")
    return f"/{PACKAGE}.{service}/{method}"


def request_type(service: str, method: str) -> str:
    return METHODS[service][method][0]


def reply_type(service: str, method: str) -> str:
    return METHODS[service][method][1]


# ---- encoding ---------------------------------------------------------------------------------
def _varint(n: int, out: bytearray) -> None:
    if n < 0:
        n += 1 << 64
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def _int(value, kind: str, name: str) -> int:
    if not isinstance(value, int):
        if hasattr(value, "value") and isinstance(value.value, int):  # an int Enum member
            value = value.value
        else:
            raise TypeError(f"{name}: {value!r} has type {type(value).__name__}, "
                            f"but an integer is expected for {kind}")
    low, high = _RANGE.get(kind, (None, None))
    if low is not None and not low <= value <= high:
        raise ValueError(f"{name}: value out of range for {kind}: {value}")
    return int(value)


def _scalar(kind: str, value, name: str, out: bytearray) -> None:
    """One scalar value's bytes (no tag) appended to out."""
    if kind == "string":
        if not isinstance(value, str):
            raise TypeError(f"{name}: {value!r} has type {type(value).__name__}, "
                            f"but str is expected")
        data = value.encode("utf-8")
        _varint(len(data), out)
        out += data
    elif kind == "bool":
        out.append(1 if value else 0)
    elif kind in ("int32", "int64", "uint32", "uint64", "enum"):
        _varint(_int(value, kind, name), out)
    elif kind == "double" or kind == "float":
        if not isinstance(value, (int, float)):
            raise TypeError(f"{name}: {value!r} has type {type(value).__name__}, "
                            f"but a number is expected")
        out += (_DOUBLE if kind == "double" else _FLOAT).pack(value)
    elif kind == "bytes":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"{name}: {value!r} has type {type(value).__name__}, "
                            f"but bytes is expected")
        _varint(len(value), out)
        out += value
    elif kind in ("sint32", "sint64"):
        n = _int(value, kind, name)
        _varint(n << 1 if n >= 0 else (-n << 1) - 1, out)
    else:  # fixed32, fixed64, sfixed32, sfixed64
        n = _int(value, kind, name)
        out += {"fixed32": _U32, "fixed64": _U64, "sfixed32": _S32, "sfixed64": _S64}[kind].pack(n)


def _is_default(kind: str, value) -> bool:
    if kind == "double" or kind == "float":
        return value == 0 and _DOUBLE.pack(value) == b"\0" * 8  # -0.0 is sent, as protobuf does
    if kind == "enum" and hasattr(value, "value"):
        value = value.value
    return not value


def _field_value(obj, name: str):
    """obj's value for a message field: a dict's item, a dataclass's field; None if it has none."""
    if isinstance(obj, dict):
        return obj.get(name)
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields is None:
        raise TypeError(f"cannot encode a {type(obj).__name__}: a dataclass or a dict is expected")
    return getattr(obj, name) if name in fields else None


def encode(msg_type: str, obj) -> bytes:
    """The serialized message msg_type (a name of fields.py, e.g. 'SubmitJobRequest') made from
    a dataclass or a dict."""
    out = bytearray()
    _encode_into(msg_type, obj, out)
    return bytes(out)


def _encode_into(msg_type: str, obj, out: bytearray) -> None:
    for name, number, kind, label, ref in MESSAGES[msg_type]:
        value = _field_value(obj, name)
        if value is None:
            continue
        if label == _REPEATED:
            if not value:
                continue
            if kind in ("string", "bytes", "message"):  # never packed: one record per item
                tag = number << 3 | _LEN
                for item in value:
                    _varint(tag, out)
                    if kind == "message":
                        body = bytearray()
                        _encode_into(ref, item, body)
                        _varint(len(body), out)
                        out += body
                    else:
                        _scalar(kind, item, name, out)
            else:
                body = bytearray()
                for item in value:
                    _scalar(kind, item, name, body)
                _varint(number << 3 | _LEN, out)
                _varint(len(body), out)
                out += body
        elif kind == "map":
            key_kind, value_kind, value_ref = ref
            tag = number << 3 | _LEN
            for k, v in value.items():
                entry = bytearray()
                _varint(1 << 3 | _WIRE_TYPE[key_kind], entry)
                _scalar(key_kind, k, name, entry)
                _varint(2 << 3 | _WIRE_TYPE[value_kind], entry)
                if value_kind == "message":
                    body = bytearray()
                    _encode_into(value_ref, v, body)
                    _varint(len(body), entry)
                    entry += body
                else:
                    _scalar(value_kind, v, name, entry)
                _varint(tag, out)
                _varint(len(entry), out)
                out += entry
        elif kind == "message":
            body = bytearray()
            _encode_into(ref, value, body)
            if body or isinstance(obj, dict) or isinstance(value, dict) or label == _EXPLICIT:
                _varint(number << 3 | _LEN, out)
                _varint(len(body), out)
                out += body
        else:
            if label == _IMPLICIT and _is_default(kind, value):
                continue
            _varint(number << 3 | _WIRE_TYPE[kind], out)
            _scalar(kind, value, name, out)


# ---- decoding ---------------------------------------------------------------------------------
def _read_varint(data, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint too long")


def _from_varint(kind: str, n: int):
    n &= (1 << 64) - 1
    if kind == "bool":
        return n != 0
    if kind in ("int64", "int32", "enum"):
        if kind != "int64":
            n &= 0xFFFFFFFF
            return n - (1 << 32) if n >= 1 << 31 else n
        return n - (1 << 64) if n >= 1 << 63 else n
    if kind == "uint32":
        return n & 0xFFFFFFFF
    if kind == "uint64":
        return n
    if kind in ("sint32", "sint64"):
        if kind == "sint32":
            n &= 0xFFFFFFFF
        return (n >> 1) ^ -(n & 1)
    raise ValueError(f"a varint for a {kind} field")


_FIXED = {"double": _DOUBLE, "float": _FLOAT, "fixed64": _U64, "fixed32": _U32,
          "sfixed64": _S64, "sfixed32": _S32}


def _default(kind: str, label: int):
    if label == _REPEATED:
        return []
    if kind == "map":
        return {}
    if kind == "message" or label == _EXPLICIT:
        return None
    return _DEFAULTS.get(kind, 0)


def decode(msg_type: str, data) -> dict:
    """A dict of every field of message msg_type from its serialized bytes."""
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    return _decode(msg_type, view, 0, len(view))


def _read_field(data, pos: int) -> tuple:
    """(field number, wire type, raw value, next position): a varint's value, a fixed field's
    bytes, or a length-delimited field's (start, stop) span."""
    key, pos = _read_varint(data, pos)
    number, wire = key >> 3, key & 7
    if wire == _VARINT:
        raw, pos = _read_varint(data, pos)
    elif wire == _I64:
        raw, pos = bytes(data[pos:pos + 8]), pos + 8
    elif wire == _I32:
        raw, pos = bytes(data[pos:pos + 4]), pos + 4
    elif wire == _LEN:
        size, pos = _read_varint(data, pos)
        raw, pos = (pos, pos + size), pos + size
    else:
        raise ValueError(f"unsupported wire type {wire} (field {number})")
    return number, wire, raw, pos


def _decode(msg_type: str, data, pos: int, end: int) -> dict:
    table = MESSAGES[msg_type]
    by_number = {f[1]: f for f in table}
    result = {f[0]: _default(f[2], f[3]) for f in table}
    while pos < end:
        number, wire, raw, pos = _read_field(data, pos)
        if pos > end:
            raise ValueError("truncated message")
        field = by_number.get(number)
        if field is None or number == 0:
            continue  # an unknown field
        name, _, kind, label, ref = field
        if kind == "map":
            key_kind, value_kind, value_ref = ref
            entry = _decode_entry(key_kind, value_kind, value_ref, data, *raw)
            result[name][entry[0]] = entry[1]
            continue
        if label == _REPEATED and wire == _LEN and kind not in ("string", "bytes", "message"):
            start, stop = raw  # packed
            items = result[name]
            while start < stop:
                if kind in _FIXED:
                    size = _FIXED[kind].size
                    items.append(_FIXED[kind].unpack(bytes(data[start:start + size]))[0])
                    start += size
                else:
                    n, start = _read_varint(data, start)
                    items.append(_from_varint(kind, n))
            if start != stop:
                raise ValueError("truncated packed field")
            continue
        value = _value(kind, wire, raw, ref, data, name)
        if label == _REPEATED:
            result[name].append(value)
        else:
            result[name] = value
    return result


def _value(kind: str, wire: int, raw, ref, data, name: str):
    if wire != _WIRE_TYPE[kind]:
        raise ValueError(f"field {name}: wire type {wire} for a {kind}")
    if wire == _VARINT:
        return _from_varint(kind, raw)
    if wire == _I64 or wire == _I32:
        return _FIXED[kind].unpack(raw)[0]
    start, stop = raw
    if kind == "message":
        return _decode(ref, data, start, stop)
    chunk = bytes(data[start:stop])
    if kind == "string":
        try:
            return chunk.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"field {name}: invalid UTF-8") from e
    return chunk


def _decode_entry(key_kind, value_kind, value_ref, data, start: int, stop: int) -> tuple:
    key, value = _default(key_kind, _IMPLICIT), _default(value_kind, _IMPLICIT)
    if value_kind == "message":
        value = _decode(value_ref, data, start, start)  # an entry without a value: all defaults
    pos = start
    while pos < stop:
        number, wire, raw, pos = _read_field(data, pos)
        if pos > stop:
            raise ValueError("truncated map entry")
        if number == 1:
            key = _value(key_kind, wire, raw, None, data, "map key")
        elif number == 2:
            value = _value(value_kind, wire, raw, value_ref, data, "map value")
    return key, value
