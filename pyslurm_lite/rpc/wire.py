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
    _filler(type(obj), msg.DESCRIPTOR)(msg, obj)
    return msg


def fill_msg(msg, obj) -> None:
    _filler(type(obj), msg.DESCRIPTOR)(msg, obj)


def from_msg(msg, cls):
    """A message to a new instance of dataclass cls, converting nested types by type hints."""
    return _maker(cls, msg.DESCRIPTOR)(msg)


# Each plan is compiled once into a straight-line function (one attribute access per field, no
# per-field dispatch): a job is some 150 fields with its spec, and squeue, sacct, launches and
# the store convert thousands of jobs at a time. Field names are a dataclass's, so identifiers.

@lru_cache(maxsize=None)
def _maker(cls, descriptor):
    """msg -> cls(...), generated from _plan."""
    env, args = {"cls": cls, "_maker": _maker}, []
    for i, (name, kind, typ) in enumerate(_plan(cls, descriptor)):
        env[f"t{i}"] = typ
        if kind in (_NESTED, _LIST_NESTED):
            env[f"m{i}"] = descriptor.fields_by_name[name].message_type
        expr = {_SCALAR: "msg.{n}", _ENUM: "t{i}(msg.{n})", _LIST: "list(msg.{n})",
                _DICT: "dict(msg.{n})", _NESTED: "_maker(t{i}, m{i})(msg.{n})",
                _LIST_NESTED: "[make(v) for make in (_maker(t{i}, m{i}),) for v in msg.{n}]",
                }[kind].format(n=name, i=i)
        args.append(f"{name}={expr}")
    return _compile("make", "msg", f"    return cls({', '.join(args)})", env)


@lru_cache(maxsize=None)
def _filler(cls, descriptor):
    """(msg, obj) -> None, filling msg from obj, generated from _plan."""
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
