"""Dataclass <-> protobuf conversion, generic over field names.

Owns: the one mapping between model.py dataclasses and generated messages. The .proto messages
use the dataclasses' field names, so a new field needs no code here. Only RPC edges (and the
store, which keeps jobs as protobuf blobs) import this.

Converters are planned once per (dataclass, message) pair from type hints and then reused:
the hot paths (submit, launch, squeue) convert thousands of jobs.
"""

from __future__ import annotations

import dataclasses
import typing
from enum import Enum
from functools import lru_cache

_SCALAR, _ENUM, _NESTED, _LIST, _LIST_NESTED, _DICT = range(6)


def _kind(hint):
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        return (_LIST_NESTED, item) if dataclasses.is_dataclass(item) else (_LIST, item)
    if origin is dict:
        return _DICT, None
    if origin is typing.Union:  # Optional[X]
        return _kind(next(a for a in typing.get_args(hint) if a is not type(None)))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _NESTED, hint
    if isinstance(hint, type) and issubclass(hint, Enum):
        return _ENUM, hint
    return _SCALAR, None


@lru_cache(maxsize=None)
def _plan(cls, descriptor) -> tuple:
    """(field name, kind, type) for each dataclass field the message also has."""
    hints = typing.get_type_hints(cls)
    names = descriptor.fields_by_name
    return tuple((f.name, *_kind(hints[f.name])) for f in dataclasses.fields(cls) if f.name in names)


def to_msg(obj, msg_cls):
    """A dataclass instance to a new message of msg_cls (fields the proto lacks are skipped)."""
    msg = msg_cls()
    fill_msg(msg, obj)
    return msg


def fill_msg(msg, obj) -> None:
    key = (type(obj), msg.DESCRIPTOR)
    fill = _fillers.get(key)
    if fill is None:
        if _count(key) < COMPILE_AFTER:
            return _fill_by_plan(msg, obj)
        fill = _fillers[key] = _compile_filler(*key)
    fill(msg, obj)


def from_msg(msg, cls):
    """A message to a new instance of dataclass cls, converting nested types by type hints."""
    key = (cls, msg.DESCRIPTOR)
    make = _makers.get(key)
    if make is None:
        if _count(key) < COMPILE_AFTER:
            return _make_by_plan(msg, cls)
        make = _makers[key] = _compile_maker(*key)
    return make(msg)


# A plan used often is compiled into a straight-line function (one attribute access per field,
# no per-field dispatch), 2-3 times faster: a job is some 150 fields with its spec, and squeue,
# sacct, launches and the store convert thousands at a time. Compiling costs about 1 ms a type,
# which a CLI that converts one job would only lose, so the first conversions walk the plan.
COMPILE_AFTER = 20
_uses: dict = {}
_makers: dict = {}
_fillers: dict = {}


def _count(key) -> int:
    _uses[key] = n = _uses.get(key, 0) + 1
    return n


def _make_by_plan(msg, cls):
    kwargs = {}
    for name, kind, typ in _plan(cls, msg.DESCRIPTOR):
        value = getattr(msg, name)
        if kind == _SCALAR:
            kwargs[name] = value
        elif kind == _ENUM:
            kwargs[name] = typ(value)
        elif kind == _LIST:
            kwargs[name] = list(value)
        elif kind == _DICT:
            kwargs[name] = dict(value)
        elif kind == _NESTED:
            kwargs[name] = from_msg(value, typ)
        else:
            kwargs[name] = [from_msg(v, typ) for v in value]
    return cls(**kwargs)


def _fill_by_plan(msg, obj) -> None:
    for name, kind, _ in _plan(type(obj), msg.DESCRIPTOR):
        value = getattr(obj, name)
        if value is None:
            continue
        if kind == _SCALAR:
            setattr(msg, name, value)
        elif kind == _ENUM:
            setattr(msg, name, value.value)
        elif kind == _LIST:
            if value:
                getattr(msg, name).extend(value)
        elif kind == _DICT:
            if value:
                getattr(msg, name).update(value)
        elif kind == _NESTED:
            fill_msg(getattr(msg, name), value)
        else:  # _LIST_NESTED
            target = getattr(msg, name)
            for item in value:
                fill_msg(target.add(), item)


# Field names are a dataclass's, so identifiers: they can be spelled into the source as they are.
def _compile_maker(cls, descriptor):
    """msg -> cls(...), the plan as one expression."""
    env, args = {"cls": cls, "from_msg": from_msg}, []
    for i, (name, kind, typ) in enumerate(_plan(cls, descriptor)):
        env[f"t{i}"] = typ
        expr = {_SCALAR: "msg.{n}", _ENUM: "t{i}(msg.{n})", _LIST: "list(msg.{n})",
                _DICT: "dict(msg.{n})", _NESTED: "from_msg(msg.{n}, t{i})",
                _LIST_NESTED: "[from_msg(v, t{i}) for v in msg.{n}]"}[kind].format(n=name, i=i)
        args.append(f"{name}={expr}")
    return _compile("make", "msg", f"    return cls({', '.join(args)})", env)


def _compile_filler(cls, descriptor):
    """(msg, obj) -> None, the plan as straight-line statements."""
    body = []
    for name, kind, _ in _plan(cls, descriptor):
        body.append(f"    v = obj.{name}")
        body.append({_SCALAR: "    if v is not None: msg.{n} = v",
                     _ENUM: "    if v is not None: msg.{n} = v.value",
                     _LIST: "    if v: msg.{n}.extend(v)",
                     _DICT: "    if v: msg.{n}.update(v)",
                     _NESTED: "    if v is not None: fill_msg(msg.{n}, v)",
                     _LIST_NESTED: "    if v:\n        t = msg.{n}\n"
                                   "        for item in v: fill_msg(t.add(), item)",
                     }[kind].format(n=name))
    return _compile("fill", "msg, obj", "\n".join(body) or "    pass", {"fill_msg": fill_msg})


def _compile(name: str, params: str, body: str, env: dict):
    namespace: dict = {}
    exec(f"def {name}({params}):\n{body}\n", env, namespace)  # our own plan, not input
    return namespace[name]


def length_delimited(field_number: int):
    """f(data) -> data as field `field_number` (length-delimited: a message, string or bytes)
    of a message being put together as bytes, for its MergeFromString: one parse in C where a
    Python copy of thousands of submessages would take twice as long."""
    if not 0 < field_number < 16:
        raise ValueError(f"field {field_number}: only numbers 1-15 have a one-byte tag")
    tag = bytes([field_number << 3 | 2])

    def field(data: bytes) -> bytes:
        n, size = len(data), bytearray()
        while n > 0x7F:
            size.append(n & 0x7F | 0x80)
            n >>= 7
        size.append(n)
        return tag + size + data
    return field
