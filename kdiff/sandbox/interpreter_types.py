"""Triton's types built once per value in the worker's interpreter.

The interpreter runs a kernel's body once per program through Triton's frontend, and every
operation of every program builds its operands' and result's block types again (the shape
unwrapped, validated and named) and finds each type's numpy dtype in a table it builds per
lookup. A type is a value: compared by its element type and shape, and never changed once
built. So one instance per value serves every program of every launch, a type's numpy
dtype is looked up once, two operands of one shape skip the broadcast that would return
them unchanged, and a tensor's shape and element count are built once per type.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Hashable


def install(interpreter, interpreted: bool) -> None:
    """`interpreted`: kernels run in the interpreter here (a tensor's shape is then built once
    per type; a compiler's tensors are left to Triton's constructor)."""
    type_key, block_key = keys()
    _block_types_built_once(block_key)
    _numpy_dtypes_found_once(interpreter, type_key)
    _operands_of_one_shape_not_broadcast()
    if interpreted:
        _tensor_shapes_built_once_per_type()


def keys() -> tuple[Callable[[Any], Hashable | None], Callable[[Any, Any], Hashable | None]]:
    """(type_key, block_key), Triton's classes bound once: they run for every operation of
    every program, where an import statement each was a third of their time."""
    import triton.language as tl

    dtype, pointer_type, constexpr = tl.dtype, tl.pointer_type, tl.constexpr
    shapes = (list, tuple, tl.tuple)

    def type_key(ty: Any) -> Hashable | None:
        """What makes two scalar or pointer types equal, as a key; None for any other type (a
        block, a tuple, one this Triton adds), which is built and looked up as Triton does."""
        if type(ty) is dtype:
            return ty.name
        if type(ty) is pointer_type:
            element = type_key(ty.element_ty)
            return None if element is None else ("pointer", element, ty.address_space, ty.const)
        return None

    def shape_key(shape: Any) -> tuple[int, ...] | None:
        """A block shape's sizes, where each is an int or a constexpr of one; None otherwise,
        left to Triton's own checks and errors."""
        sizes = []
        for size in shape:
            if type(size) is constexpr:
                size = size.value
            if type(size) is not int:
                return None
            sizes.append(size)
        return tuple(sizes)

    def block_key(element_ty: Any, shape: Any) -> Hashable | None:
        if not isinstance(shape, shapes):
            return None
        element, sizes = type_key(element_ty), shape_key(shape)
        return None if element is None or sizes is None else (element, sizes)

    return type_key, block_key


def _block_types_built_once(block_key: Callable[[Any, Any], Hashable | None]) -> None:
    import triton.language as tl

    block_type = tl.core.block_type
    if getattr(block_type, "built_once", False):
        return
    build = block_type.__init__
    built: dict[Hashable, Any] = {}

    def new(cls, *args, **kwargs):
        key = block_key(*args) if cls is block_type and len(args) == 2 and not kwargs else None
        if key is not None and key in built:
            return built[key]
        ty = object.__new__(cls)
        # A subclass is built by its own __init__, and a copy or unpickling (no arguments)
        # by its state, as in Triton.
        if cls is block_type and (args or kwargs):
            build(ty, *args, **kwargs)  # raises as Triton does for a shape it refuses
            if key is not None:
                ty.interned_sizes = key[1]
                built[key] = ty
        return ty

    def init(self, *args, **kwargs):
        if type(self) is not block_type:
            build(self, *args, **kwargs)  # a block_type itself was built in `new`, once

    block_type.__new__ = new
    block_type.__init__ = init
    block_type.built_once = True


def _numpy_dtypes_found_once(interpreter, type_key: Callable[[Any], Hashable | None]) -> None:
    find = getattr(interpreter, "_get_np_dtype", None)
    if find is None or getattr(find, "found_once", False):
        return
    found: dict[Hashable, Any] = {}

    def find_once(tt_dtype):
        key = type_key(tt_dtype)
        if key is None:
            return find(tt_dtype)
        if key not in found:
            found[key] = find(tt_dtype)
        return found[key]

    find_once.found_once = True
    interpreter._get_np_dtype = find_once


def _operands_of_one_shape_not_broadcast() -> None:
    """Two operands of one block shape (or of one type) are what Triton's broadcast returns
    unchanged, after comparing their shapes through its own tuples; that is said here from the
    sizes a block type built once keeps, and any other pair goes through Triton's."""
    from triton.language.semantic import TritonSemantic

    broadcast = TritonSemantic.broadcast_impl_value
    if getattr(broadcast, "same_shapes_kept", False):
        return

    def broadcast_unless_one_shape(self, lhs, rhs):
        lhs_ty, rhs_ty = lhs.type, rhs.type
        if lhs_ty is rhs_ty:
            return lhs, rhs
        lhs_sizes = getattr(lhs_ty, "interned_sizes", None)
        if lhs_sizes is not None and lhs_sizes == getattr(rhs_ty, "interned_sizes", None):
            return lhs, rhs
        return broadcast(self, lhs, rhs)

    broadcast_unless_one_shape.same_shapes_kept = True
    TritonSemantic.broadcast_impl_value = broadcast_unless_one_shape


def _tensor_shapes_built_once_per_type() -> None:
    """Every tensor Triton builds (each operation's result) built its shape again from its
    type's sizes: a constexpr of each size, a tuple of them and the tuple's type, and a
    constexpr of the element count. For a scalar type, and a block type built once, those
    are built once per type; each tensor gets a tuple of its own (Triton's tuples can be
    assigned into), holding the constexprs and tuple type, which nothing changes once built.
    A tensor of any other type is built by Triton's own constructor."""
    import triton.language as tl

    tensor, build = tl.core.tensor, tl.core.tensor.__init__
    if getattr(build, "shapes_built_once", False):
        return
    block_type, dtype, pointer_type = tl.core.block_type, tl.dtype, tl.pointer_type
    constexpr, shape_tuple, class_of = tl.constexpr, tl.core.tuple, type

    def shape_of(sizes: tuple[int, ...]) -> tuple[Any, list, Any]:
        """(element count, a constexpr of each size, their tuple's type), as Triton's
        constructor builds them."""
        constexprs = [constexpr(size) for size in sizes]
        return constexpr(math.prod(sizes)), constexprs, shape_tuple(constexprs).type

    no_shape = shape_of(())
    shapes: dict[tuple[int, ...], tuple[Any, list, Any]] = {}

    def init(self, handle, type):
        kind = class_of(type)
        if kind is block_type:
            sizes = getattr(type, "interned_sizes", None)
            if sizes is None:
                build(self, handle, type)
                return
            shape = shapes.get(sizes)
            if shape is None:
                shape = shapes[sizes] = shape_of(sizes)
        elif kind is dtype or kind is pointer_type:
            shape = no_shape
        else:
            build(self, handle, type)
            return
        numel, constexprs, constexprs_type = shape
        dims = object.__new__(shape_tuple)
        dims.values, dims.type = list(constexprs), constexprs_type
        self.handle, self.shape, self.numel = handle, dims, numel
        self.type, self.dtype = type, type.scalar

    init.shapes_built_once = True
    tensor.__init__ = init
