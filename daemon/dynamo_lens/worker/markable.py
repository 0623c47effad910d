"""Which of a target's arguments a fix may edit where the example builds its calls
(fixes/dynamic.py): a tensor every one of its calls passes the same way (by position, by
keyword, or at the same keys inside a container argument) and nothing else reaches (a mark
stays on the tensor), the sizes that vary across those calls, and the Python numbers it takes.
Computed once per target (usercode.targets_of), read where a recompile finding is made."""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any, Protocol

import torch

from ..findings import MarkDynamic, ScalarArg

Path_ = tuple[int | str, ...]  # keys inside a container argument: ("input_ids",)
Dims = tuple[int, ...]


def _arguments(item: Any) -> dict[int | str, Any] | None:
    """An example entry's arguments by position (an args tuple) and by keyword (its kwargs
    dict); None where its args are a bare value (``_as_call`` wraps it: ``entry[1][i]`` would
    index into it) or its kwargs no dict."""
    args = item[1]
    kwargs = item[2] if len(item) == 3 else {}
    if not isinstance(args, (tuple, list)) or isinstance(args, torch.Tensor):
        return None
    if not isinstance(kwargs, dict):
        return None
    out: dict[int | str, Any] = dict(enumerate(args))
    out.update((k, v) for k, v in kwargs.items() if isinstance(k, str))
    return out


def _every(own: list[Any], keep: Callable[[Any], bool]) -> frozenset[int | str]:
    """The positions and keywords where every one of ``own`` passes a value ``keep`` takes."""
    out: set[int | str] | None = None
    for item in own:
        given = _arguments(item)
        if given is None:
            return frozenset()
        ok = {k for k, v in given.items() if keep(v)}
        out = ok if out is None else out & ok
    return frozenset(out or ())


def markable_args(own: list[Any], others: set[int]) -> frozenset[int | str]:
    """Where every one of ``own`` (this target's entries of the example's return) passes a
    tensor nothing else reaches (``others``, ``reached_elsewhere``). A mark stays on the
    tensor: another target given it would compile it dynamic too, and raise where it branches
    on its size."""
    return _every(own, lambda a: isinstance(a, torch.Tensor) and id(a) not in others)


def top_level_tensors(module: types.ModuleType) -> set[int]:
    """The tensors (by id) the file keeps at its top level (a list of inputs more than one
    example returns): once per example, whatever its targets."""
    skip = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)
    kept = [v for k, v in vars(module).items() if k[:2] != "__" and not isinstance(v, skip)]
    return {id(v) for v in _tensors(kept)}


def reached_elsewhere(items: list[Any], mine: list[int], top: set[int]) -> set[int]:
    """The tensors (by id) that other targets' entries reach (their arguments, or their target's
    own state: a module keeping the tensor as an attribute), or the file's top level (``top``)."""
    return top | {
        id(v)
        for j, item in enumerate(items)
        if j not in mine
        for v in _tensors((item[0], item[1], item[2] if len(item) == 3 else {}))
    }


def nested_paths(own: list[Any], others: set[int]) -> dict[int | str, frozenset[Path_]]:
    """For each argument every one of ``own`` passes as a container (a batch dict, a list of
    inputs), the key paths where each holds a tensor nothing else reaches."""
    given = [_arguments(item) for item in own]
    if not given or any(g is None for g in given):
        return {}
    out: dict[int | str, frozenset[Path_]] = {}
    for key in set.intersection(*(set(g or {}) for g in given)):
        paths: set[Path_] | None = None
        for g in given:
            found = {p for p, t in _paths((g or {})[key]) if p and id(t) not in others}
            paths = found if paths is None else paths & found
        if paths:
            out[key] = frozenset(paths)
    return out


def _paths(value: Any, prefix: Path_ = (), depth: int = 0) -> list[tuple[Path_, Any]]:
    """The tensors in ``value``'s dicts, lists and tuples (three levels, 64 items each), with
    the keys that reach them."""
    if isinstance(value, torch.Tensor):
        return [(prefix, value)]
    if depth >= 3:
        return []
    if isinstance(value, dict):
        pairs = [(k, v) for k, v in value.items() if isinstance(k, (str, int))]
    elif isinstance(value, (list, tuple)):
        pairs = list(enumerate(value[:64]))
    else:
        return []
    return [found for k, v in pairs[:64] for found in _paths(v, (*prefix, k), depth + 1)]


def varying_dims(own: list[Any], markable: frozenset[int | str]) -> dict[int | str, Dims]:
    """For each of the ``markable`` arguments, the dimensions whose size is not the same in
    every one of ``own`` (tensors of one rank)."""
    out: dict[int | str, Dims] = {}
    given = [_arguments(item) or {} for item in own]
    for key in sorted(markable, key=str):
        values = [g[key] for g in given]
        if len({v.dim() for v in values}) != 1:
            continue
        dims = tuple(d for d in range(values[0].dim()) if len({v.shape[d] for v in values}) > 1)
        if dims:
            out[key] = dims
    return out


def scalar_args(own: list[Any]) -> frozenset[int | str]:
    """Where every one of ``own`` passes an int or a float (not a bool)."""
    return _every(own, lambda a: isinstance(a, (int, float)) and not isinstance(a, bool))


def passed_as(
    var: str,
    names: list[str],
    where: frozenset[int | str],
    nested: dict[int | str, frozenset[Path_]] | None = None,
    keywords: frozenset[str] = frozenset(),
) -> dict[str, Any] | None:
    """How every call passes the target's parameter ``var``, among ``where`` (positions and
    keywords, usercode.Target.markable): ``{"arg": i}`` by position, ``{"keyword": var}`` by
    keyword; None where it is not one of the target's parameters or not passed one way.
    ``names``: the target's positional parameters, ``keywords`` its keyword-only ones. A
    tensor inside one (torch's ``batch['input_ids']``) adds the keys that reach it
    (``"path"``), where ``nested`` (Target.nested) has them."""
    if var in keywords and var in where:
        return {"keyword": var}
    if var not in names:
        base, path = _subscripted(var)
        if base is None or not nested:
            return None
        outer = passed_as(base, names, frozenset(nested))
        if outer is None or tuple(path) not in nested[next(iter(outer.values()))]:
            return None
        return {**outer, "path": path}
    if names.index(var) in where:
        return {"arg": names.index(var)}
    if var in where:
        return {"keyword": var}
    return None


def _subscripted(var: str) -> tuple[str | None, list[int | str]]:
    """``batch['input_ids'][0]`` as ("batch", ["input_ids", 0]); (None, []) for anything
    else."""
    try:
        node = ast.parse(var, mode="eval").body
    except SyntaxError:
        return None, []
    path: list[int | str] = []
    while isinstance(node, ast.Subscript):
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            return None, []
        path.insert(0, key)
        node = node.value
    return (node.id, path) if isinstance(node, ast.Name) and path else (None, [])


def _tensors(value: Any, depth: int = 0) -> list[Any]:
    """Every tensor in ``value``, inside tuples, lists and dicts too (a shared tensor may sit in
    another target's list of inputs); bounded, as arguments are."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 6:
        return []
    if isinstance(value, dict):
        value = list(value.values())
    elif not isinstance(value, (tuple, list, str, bytes, type, types.ModuleType)) and hasattr(
        value, "__dict__"
    ):
        value = list(vars(value).values())  # an object holding inputs (a dataclass, a batch)
    if isinstance(value, (tuple, list)):
        return [t for v in value[:10_000] for t in _tensors(v, depth + 1)]
    return []


class Marks(Protocol):
    """What a target knows of its calls for a fix that edits them (usercode.Target)."""

    markable: frozenset[int | str]
    scalars: frozenset[int | str]
    varying: dict[int | str, tuple[int, ...]]
    nested: dict[int | str, frozenset[Path_]]
    positions: tuple[int, ...] | None


def mark_dynamic_data(
    var: str, dim: int, names: list[str], t: Marks, keywords: frozenset[str] = frozenset()
) -> MarkDynamic:
    """A recompile on ``var``'s size at ``dim``: where the example's calls hold that tensor
    (a position, a keyword, keys inside either), the other sizes that vary with it, and the
    entries of the example's list that are this target's; only the variable and the dimension
    where it is not the target's own argument (``names`` empty: a callee's)."""
    data: MarkDynamic = {"variable": var, "dim": dim}
    where = passed_as(var, names, t.markable, t.nested, keywords)
    if where is None:
        return data
    data.update(where)  # type: ignore[typeddict-item]
    mine = next(iter(where.values()))
    also = [
        {"arg" if isinstance(k, int) else "keyword": k, "dim": d}
        for k, dims in t.varying.items()
        for d in dims
        if (k, d) != (mine, dim) or "path" in where
    ]
    if also:
        data["also"] = also
    if t.positions is not None:
        data["calls"] = list(t.positions)
    return data


def scalar_arg_data(
    var: str, names: list[str], t: Marks, keywords: frozenset[str] = frozenset()
) -> ScalarArg | None:
    """A Python number of the target's own, passed the same way in every call: as a 0-d
    tensor it is data, not a constant torch specialises on (fixes/dynamic.py)."""
    where = passed_as(var, names, t.scalars, keywords=keywords)
    if where is None:
        return None
    data: ScalarArg = {"variable": var, **where}  # type: ignore[typeddict-item]
    if t.positions is not None:
        data["calls"] = list(t.positions)
    return data
