"""Dataclass <-> protobuf conversion, generic over field names.

Owns: the one mapping between model.py dataclasses and generated messages. The .proto messages
use the dataclasses' field names, so a new field needs no code here. Only RPC edges import this.
"""

from __future__ import annotations

import dataclasses
import typing
from enum import Enum
from functools import lru_cache


@lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def to_msg(obj, msg_cls):
    """A dataclass instance to a new message of msg_cls (unknown-to-proto fields are skipped)."""
    msg = msg_cls()
    fill_msg(msg, obj)
    return msg


def fill_msg(msg, obj) -> None:
    descriptor = msg.DESCRIPTOR.fields_by_name
    for f in dataclasses.fields(obj):
        fd = descriptor.get(f.name)
        if fd is None:
            continue
        value = getattr(obj, f.name)
        if value is None:
            continue
        target = getattr(msg, f.name)
        if dataclasses.is_dataclass(value):
            fill_msg(target, value)
        elif isinstance(value, dict):
            target.update({k: v for k, v in value.items()})
        elif isinstance(value, list):
            if value and dataclasses.is_dataclass(value[0]):
                for item in value:
                    fill_msg(target.add(), item)
            else:
                target.extend(value)
        elif isinstance(value, Enum):
            setattr(msg, f.name, value.value)
        else:
            setattr(msg, f.name, value)


def from_msg(msg, cls):
    """A message to a new instance of dataclass cls, converting nested types by type hints."""
    hints = _hints(cls)
    kwargs = {}
    fields_by_name = msg.DESCRIPTOR.fields_by_name
    for f in dataclasses.fields(cls):
        if f.name not in fields_by_name:
            continue
        kwargs[f.name] = _convert(getattr(msg, f.name), hints[f.name])
    return cls(**kwargs)


def _convert(value, hint):
    origin = typing.get_origin(hint)
    if origin is list:
        (item_type,) = typing.get_args(hint)
        return [_convert(v, item_type) for v in value]
    if origin is dict:
        return dict(value)
    if origin is typing.Union:  # Optional[X]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(value, args[0])
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_msg(value, hint)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    return value
