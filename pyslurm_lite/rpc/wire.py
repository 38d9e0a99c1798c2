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


def from_msg(msg, cls):
    """A message to a new instance of dataclass cls, converting nested types by type hints."""
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
