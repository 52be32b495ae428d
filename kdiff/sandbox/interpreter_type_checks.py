"""Triton's type check of a binary operation decided once per pair of operand types in the
worker's interpreter.

The interpreter runs a kernel's body once per program through Triton's frontend, and every
binary operation of two tensors checks its operands' element types again: pointer rules,
the computation type, a cast of each operand to it, then the broadcast. For two tensors
that check depends on their element types and the operation's flags alone, never on their
values or shapes. So the first operation of a pair is checked by Triton; where it casts
neither operand (the element types are unchanged, which is what a cast to the same type
returns), every later operation of that pair goes straight to Triton's broadcast. A pair
that casts, raises, or has a Python number or a type without a key goes through Triton's
check every time, as shipped.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable


def install(type_key: Callable[[Any], Hashable | None]) -> None:
    """`type_key`: what makes two element types equal, as a key (None for a type to leave
    to Triton): kdiff.sandbox.interpreter_types.keys()."""
    import triton.language as tl
    from triton.language.semantic import TritonSemantic

    check = TritonSemantic.binary_op_type_checking_impl
    if getattr(check, "decided_once", False):
        return
    tensor = tl.tensor
    casts_nothing: dict[Hashable, bool] = {}

    def check_once_per_types(self, lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False,
                             arithmetic_check=True, div_or_mod=False):
        if type(lhs) is not tensor or type(rhs) is not tensor:
            return check(self, lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check,
                         div_or_mod)
        lhs_key, rhs_key = type_key(lhs.dtype), type_key(rhs.dtype)
        key = (type(self), lhs_key, rhs_key, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check,
               div_or_mod)
        if lhs_key is not None and rhs_key is not None and casts_nothing.get(key):
            return self.broadcast_impl_value(lhs, rhs)
        # raises as Triton does, and then nothing is decided
        checked = check(self, lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check,
                        div_or_mod)
        if lhs_key is not None and rhs_key is not None:
            casts_nothing[key] = checked[0].dtype == lhs.dtype and checked[1].dtype == rhs.dtype
        return checked

    check_once_per_types.decided_once = True
    check_once_per_types.shipped = check
    TritonSemantic.binary_op_type_checking_impl = check_once_per_types
