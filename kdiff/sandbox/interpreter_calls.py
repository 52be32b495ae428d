"""A builtin of `tl` called in an interpreted kernel reaches its function in one call.

The interpreter patches each builtin of `tl` (and of `tl.tensor`: every operator) for a
launch with a lambda that copies the call's keyword arguments without `_semantic` into a new
dict and calls Triton's builtin wrapper with the interpreter's semantic, and that wrapper
checks the semantic is there and calls the function: two calls and a dict built for every
operation of every program. Where the member is Triton's builtin wrapper itself, the patch
here calls the function it wraps, with the keyword arguments as they are and the
interpreter's semantic in place of any passed: what the wrapper would call, with the same
arguments. Any other member is patched as the interpreter patches it.
"""

from __future__ import annotations


def install(interpreter) -> None:
    patch_attr = getattr(interpreter, "_patch_attr", None)
    if patch_attr is None or getattr(patch_attr, "calls_directly", False) \
            or not hasattr(interpreter, "interpreter_semantic"):
        return
    import triton.language as tl

    wrapper_code = tl.core.builtin(lambda: None).__code__
    if "fn" not in wrapper_code.co_freevars:  # another Triton's wrapper: left as shipped
        return
    wrapped_at = wrapper_code.co_freevars.index("fn")

    def patch_attr_calling_directly(obj, name, member, builder, scope):
        if getattr(member, "__code__", None) is not wrapper_code:
            patch_attr(obj, name, member, builder, scope)
            return
        function = member.__closure__[wrapped_at].cell_contents

        def call(*args, **kwargs):
            kwargs["_semantic"] = interpreter.interpreter_semantic
            return function(*args, **kwargs)

        scope.set_attr(obj, name, call)

    patch_attr_calling_directly.calls_directly = True
    interpreter._patch_attr = patch_attr_calling_directly
