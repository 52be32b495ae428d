"""The judge's own module of a file's Triton kernels (kdiff.sandbox.kernel_source): what it keeps, and
the kernels it refuses to build because compiling them would run code it did not check."""
from __future__ import annotations

import importlib.util
import inspect
import math
import os
from pathlib import Path

import pytest

from kdiff.sandbox.kernel_source import NotExtractable, extract

HERE = Path(__file__).parent
KERNELS = HERE.parent / "kernels" / "runs"

HEADER = "import os\nimport triton\nimport triton.language as tl\nfrom triton.language.extra " \
         "import libdevice\n"


def test_every_corpus_kernel_is_built_from_its_source():
    files = sorted(KERNELS.glob("*/*.py"))
    built = [f for f in files if b"triton.jit" in f.read_bytes()]
    assert len(built) > 40
    for f in built:
        assert extract(f.read_bytes(), str(f)).kernels, f


def test_only_imports_constants_and_kernels_are_kept():
    module = extract((HERE / "hostile" / "forges_compile_results.py").read_bytes(), "forger")
    assert module.kernels == {"copy_kernel"}
    assert "os._exit" not in module.text and "load_module" not in module.text
    assert "class ModelNew" not in module.text and "import json" not in module.text


@pytest.mark.parametrize("body,why", [
    ("tl.core.builtins.exec('1')", "reaches module builtins"),  # Triton's modules lead
    # nowhere else
    ("os.system('id')", "names os"),  # not an import the judge keeps
    ("x.__class__", "private attribute"),
    ("helper(x)", "names helper"),
    ("triton.runtime.driver", "outside triton.language and math"),
    ("triton.compile(x)", "outside triton.language and math"),
], ids=["through triton.language", "os", "dunder", "a python helper", "triton.runtime",
        "triton.compile"])
def test_a_kernel_that_names_anything_else_is_refused(body, why):
    source = HEADER + f"def helper(x):\n    return x\n\n@triton.jit\ndef k(x):\n    {body}\n"
    with pytest.raises(NotExtractable, match=why):
        extract(source.encode(), "k.py")


def test_constants_and_libdevice_are_kept():
    source = HEADER + ("BLOCK = tl.constexpr(2 * 64)\nDTYPE = tl.float32\n"
                       "@triton.jit(do_not_specialize=['n'])\n"
                       "def k(x, n, B: tl.constexpr = BLOCK):\n"
                       "    y = libdevice.exp(tl.load(x).to(DTYPE))\n    tl.store(x, y)\n")
    module = extract(source.encode(), "k.py")
    assert module.kernels == {"k"} and "BLOCK = tl.constexpr(2 * 64)" in module.text
    for computed in ("BLOCK = tl.constexpr(int('128'))", "BLOCK = tl.constexpr(os.cpu_count())"):
        with pytest.raises(NotExtractable, match="not a constant"):
            extract(source.replace("BLOCK = tl.constexpr(2 * 64)", computed).encode(), "k.py")


def test_math_of_constants_is_a_constant(tmp_path):
    """xformers' activations (copied into flash-attention and based) define `_sqrt2pi =
    math.sqrt(2.0 / math.pi)` beside the jit functions that name it: the judge took no call
    but tl.constexpr's for a constant and refused every kernel reaching one of them (based's
    linear layers: RES-02 undecided). Kept as written, for Triton's compiler to take or refuse
    as on the GPU; math of anything else is still no constant."""
    source = HEADER + ("import math\nSQRT_2_PI = math.sqrt(2.0 / math.pi)\n"
                       "@triton.jit\ndef k(x):\n    tl.store(x, tl.load(x) * SQRT_2_PI)\n")
    module = extract(source.encode(), "k.py")
    assert module.kernels == {"k"} and "SQRT_2_PI = math.sqrt(2.0 / math.pi)" in module.text
    assert _load(module.text, tmp_path / "rebuilt.py").SQRT_2_PI == (2.0 / math.pi) ** 0.5
    with pytest.raises(NotExtractable, match="not a constant"):
        extract(source.replace("2.0 / math.pi", "os.cpu_count()").encode(), "k.py")


def test_an_import_from_a_module_this_triton_lacks_binds_nothing(tmp_path):
    """based's linear layers import `early_config_prune` from `triton.ops.matmul_perf_model`
    (their autotuner's pruning; Triton 3 dropped `triton.ops`): the judge's module kept the
    import, and RES-02's compiler child could not import it. No body names it: dropped."""
    source = HEADER + ("from triton.ops.matmul_perf_model import early_config_prune\n"
                       "@triton.jit\ndef k(x):\n    tl.store(x, tl.load(x) + 1)\n")
    module = extract(source.encode(), "k.py")
    assert module.kernels == {"k"} and "triton.ops" not in module.text
    assert _load(module.text, tmp_path / "rebuilt.py").k is not None


def test_triton_s_compile_time_helpers_are_kept():
    """`triton.next_power_of_2` and `triton.cdiv` are functions Triton runs at compile time on
    constants (flash-attention's rotary kernel sizes its block by one); `triton`'s other names
    are refused above."""
    source = HEADER + ("@triton.jit\ndef k(x, N: tl.constexpr):\n"
                       "    B: tl.constexpr = triton.next_power_of_2(N)\n"
                       "    offs = tl.arange(0, B) * triton.cdiv(N, B)\n"
                       "    tl.store(x + offs, tl.load(x + offs), mask=offs < N)\n")
    assert extract(source.encode(), "k.py").kernels == {"k"}


def test_naming_and_launch_hooks_of_the_jit_decorator_are_dropped():
    """`triton.jit(repr=name_fn, launch_metadata=hook)` names the compiled kernel and feeds
    profilers (aiter, triton_kernels); the functions it is given are the file's own code, not
    built, and the kernel is built without them. Any other keyword must still be constant."""
    source = HEADER + ("def name_fn(spec):\n    os.system('id')\n"
                       "@triton.jit(repr=name_fn, launch_metadata=lambda g, k, a: {})\n"
                       "def k(x):\n    tl.store(x, 0)\n")
    module = extract(source.encode(), "k.py")
    assert module.kernels == {"k"} and "name_fn" not in module.text, module.text
    other = "@triton.jit\ndef other(x):\n    tl.store(x, 1)\n"
    refused = source.replace("repr=name_fn", "do_not_specialize=name_fn") + other
    assert extract(refused.encode(), "k.py").kernels == {"other"}


def test_no_module_is_reached_through_a_variable():
    text = HEADER + "@triton.jit\ndef k(x):\n    t = tl.core\n    t.os.system('id')\n"
    with pytest.raises(NotExtractable, match="uses module triton.language.core as a value"):
        extract(text.encode(), "k.py")


def test_an_import_s_name_is_not_rebound():
    """tl stays triton.language, where `inspect` is absent (reaching nothing; the compiler
    raises there), not triton.language.core, where it is the module inspect."""
    text = HEADER + "tl = tl.core\n@triton.jit\ndef k(x):\n    tl.inspect.getsource(k)\n"
    module = extract(text.encode(), "k.py")
    assert module.kernels == {"k"} and "tl = tl.core" not in module.text


def test_a_name_absent_from_triton_reaches_nothing():
    """Triton 2's `tl.libdevice` in a constexpr branch: kept (no compiler reaches it where the
    branch is not taken, and one raises where it is); a module is still never reached."""
    text = HEADER + ("@triton.jit\ndef k(x, ROUND: tl.constexpr):\n    y = tl.load(x)\n"
                     "    if ROUND:\n        y = tl.libdevice.trunc(y)\n    tl.store(x, y)\n")
    assert extract(text.encode(), "k.py").kernels == {"k"}


VERSION_SWITCH = ("import triton\nimport triton.language as tl\nfrom helpers import new_triton\n"
                  "if new_triton():\n"
                  "    try:\n"
                  "        from triton.language.extra.libdevice import rsqrt\n"
                  "    except ModuleNotFoundError:\n"
                  "        from triton.language.extra.cuda.libdevice import rsqrt\n"
                  "else:\n"
                  "    from triton.language.math import rsqrt\n"
                  "@triton.jit\ndef k(x):\n    tl.store(x, rsqrt(tl.load(x)))\n")


def test_a_version_switch_s_first_import_that_resolves_is_kept():
    """As Liger-Kernel chooses libdevice by Triton version: the condition is the candidate's
    code and is not run; every branch imports Triton's."""
    module = extract(VERSION_SWITCH.encode(), "k.py")
    assert module.kernels == {"k"}
    assert "from triton.language.extra.libdevice import rsqrt" in module.text
    assert "cuda.libdevice" not in module.text and "new_triton" not in module.text


@pytest.mark.parametrize("switch", [
    "try:\n    import os\nexcept ImportError:\n    pass\n",
    "if True:\n    from os import system as rsqrt\n",
    "try:\n    from triton.language.core import _unwrap_if_constexpr as rsqrt\nexcept Exception:\n    pass\n",
], ids=["os", "os.system as rsqrt", "a private name"])
def test_a_switch_reaches_nothing_outside_triton(switch):
    text = ("import triton\nimport triton.language as tl\n" + switch +
            "@triton.jit\ndef k(x):\n    tl.store(x, rsqrt(tl.load(x)))\n    os.getpid()\n")
    with pytest.raises(NotExtractable, match="names (rsqrt|os)"):
        extract(text.encode(), "k.py")


INDUCTOR_HEADER = ("import triton\nimport triton.language as tl\n"
                   "from torch._inductor.runtime import triton_helpers, triton_heuristics\n"
                   "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\n"
                   "from torch._inductor.runtime.hints import DeviceProperties\n"
                   "triton_helpers.set_driver_to_gpu()\n")


def test_inductor_kernels_keep_torchs_triton_helpers_and_nothing_else():
    """torch.compile's kernels call inductor's helpers and Triton's libdevice through them."""
    source = INDUCTOR_HEADER + (
        "@triton_heuristics.pointwise(size_hints={'x': 8}, filename=__file__)\n"
        "@triton.jit\ndef k(in_ptr0, XBLOCK: tl.constexpr):\n"
        "    x = tl.load(in_ptr0 + tl.arange(0, XBLOCK))\n"
        "    y = tl_math.exp(libdevice.tanh(triton_helpers.maximum(x, x)))\n"
        "    tl.store(in_ptr0 + tl.arange(0, XBLOCK), y)\n")
    module = extract(source.encode(), "c.py")
    assert module.kernels == {"k"}
    assert "from torch._inductor.runtime import triton_helpers\n" in module.text
    for dropped in ("triton_heuristics", "DeviceProperties", "set_driver_to_gpu"):
        assert dropped not in module.text, dropped
    for body, why in (("triton_heuristics.os", "names triton_heuristics"),
                      ("triton_helpers.__builtins__", "private attribute")):
        text = INDUCTOR_HEADER + f"@triton.jit\ndef k(x):\n    {body}\n"
        with pytest.raises(NotExtractable, match=why):
            extract(text.encode(), "c.py")


def _load(text: str, path: Path):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _annotations(kernel) -> list[tuple[str, str, bool]]:
    """What Triton's JIT reads from each parameter (the interpreter's wrapper, where
    TRITON_INTERPRET is set, keeps the function as `fn`)."""
    # Imported here, not at collection: Triton first imported before a later test file sets
    # TRITON_INTERPRET compiles its standard library, which interpreted kernels cannot call.
    from triton.runtime.jit import KernelParam
    fn = getattr(kernel, "fn", kernel)
    params = [KernelParam(i, p, False, False)
              for i, p in enumerate(inspect.signature(fn).parameters.values())]
    return [(p.annotation, p.annotation_type, p.is_constexpr) for p in params]


@pytest.mark.parametrize("header,params", [
    ("import torch\n", "x: torch.Tensor, n: int, f: float, flag: bool, B: tl.constexpr"),
    ("from torch import Tensor as T\n", "x: T, n: int, B: tl.constexpr"),
    ("from __future__ import annotations\nclass Box: pass\n", "x: Box, n: int, B: tl.constexpr"),
    ("", "x: tl.pointer_type(tl.int64), n: tl.pointer_type(tl.float32, const=True), "
         "B: tl.constexpr"),
], ids=["torch and builtins", "a torch class renamed", "future annotations",
        "triton pointer types"])
def test_python_annotations_read_as_triton_reads_them(tmp_path, header, params):
    """Written kernels annotate their parameters with Python's and torch's classes; Triton
    reads a name from each, and the judge's module must give it the same names."""
    source = header + HEADER + (f"@triton.jit\ndef k({params}) -> None:\n"
                                "    tl.store(x + tl.arange(0, B), n)\n")
    module = extract(source.encode(), "k.py")
    original = _load(source, tmp_path / "original.py").k
    rebuilt = _load(module.text, tmp_path / "rebuilt.py").k
    assert _annotations(rebuilt) == _annotations(original)


@pytest.mark.parametrize("header,note,why", [
    ("class int: pass\n", "int", "not Triton's: int"),  # a builtin's name, rebound
    ("import numpy\n", "numpy.ndarray", "not Triton's: numpy.ndarray"),
    ("import torch\n", "torch.float32", "not a class"),
    ("import torch\n", "torch._C._TensorBase", "not Triton's"),
    ("import typing\n", "typing.Optional[int]", "not a name"),
    ("", "tl.pointer_type(os.environ)", "not a name"),  # a Triton type of what is not constant
], ids=["rebound builtin", "another library", "not a class", "private", "subscript",
        "triton type of a variable"])
def test_other_annotations_are_refused(header, note, why):
    source = header + HEADER + f"@triton.jit\ndef k(x: {note}):\n    tl.store(x, 0)\n"
    with pytest.raises(NotExtractable, match=why):
        extract(source.encode(), "k.py")


def _package(tmp_path: Path, kernel_import: str, call: str = "twice") -> Path:
    """A package `pkg` whose kernel file calls a jit function of another of its files (as
    `call` names it); both files bind `BLOCK` and `tl`, to different things."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('the judge never imports the package')\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(
        "import triton\nimport triton.language as language\nimport torch\n"
        "BLOCK = language.constexpr(3.0)\nCONFIGS = [torch.cuda.device_count()]  # not a constant: dropped\n"
        "@triton.jit\ndef scale(x):\n    return x * BLOCK\n\n"
        "@triton.jit\ndef twice(x):\n    return scale(x) + language.zeros_like(x)\n"
        "double = twice\n")
    kernel = pkg / "sub" / "kernels.py"
    kernel.write_text(
        "import triton\nimport triton.language as tl\n" + kernel_import +
        "\nBLOCK: tl.constexpr = 64\n"
        "@triton.jit\ndef k(x_ptr, out_ptr, n, B: tl.constexpr = BLOCK):\n"
        "    offs = tl.program_id(0) * B + tl.arange(0, B)\n"
        "    x = tl.load(x_ptr + offs, mask=offs < n)\n"
        f"    tl.store(out_ptr + offs, {call}(x), mask=offs < n)\n")
    return kernel


@pytest.mark.parametrize("kernel_import", [
    "from ..helpers import twice", "from pkg.helpers import twice as twice",
], ids=["relative", "absolute, inside the package"])
def test_a_jit_function_from_another_file_of_the_package_is_read_from_it(tmp_path,
                                                                         kernel_import):
    """attorch's activation kernels call `apply_dropout`, imported from a sibling file
    (`from .dropout_kernels import apply_dropout`): the judge refused to build their module,
    and RES-02 left every attorch activation undecided on the CPU. The other file is read (never
    imported: its package's __init__ raises), its names kept apart from the kernel's."""
    import triton
    from triton.backends.compiler import GPUTarget
    kernel = _package(tmp_path, kernel_import)
    module = extract(kernel.read_bytes(), str(kernel))
    assert module.kernels == {"k"} and module.followed == (str(tmp_path / "pkg" / "helpers.py"),)
    assert "torch" not in module.text and "device_count" not in module.text
    rebuilt = _load(module.text, tmp_path / "rebuilt.py")
    k = getattr(rebuilt.k, "fn", rebuilt.k)
    assert k.__globals__["BLOCK"] == 64  # the kernel's own, not the helper's 3.0
    helper = rebuilt.twice
    prefix = getattr(helper, "fn", helper).__name__[:-len("twice")]
    assert getattr(helper, "fn", helper).__globals__[f"{prefix}BLOCK"].value == 3.0
    if os.environ.get("TRITON_INTERPRET") == "1":
        return  # the compile below needs Triton's compiler, as RES-02's child has it
    src = triton.compiler.ASTSource(fn=rebuilt.k, signature={"x_ptr": "*fp32", "out_ptr": "*fp32",
                                                              "n": "i32", "B": "constexpr"},
                                    constexprs={(3,): 64})
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    assert "mul" in compiled.asm["ttir"] and "3.000000e+00" in compiled.asm["ttir"]


def test_a_jit_function_from_another_installed_package_is_read_from_it(tmp_path, monkeypatch):
    """based's linear layers take their activations from another installed package (`from
    flash_attn.ops.triton.k_activations import gelu_approx`): the judge looked for the package
    above the kernel's file only, refused the kernels, and RES-02 left them undecided. A
    package on the path is found by its folder (never imported: its __init__ raises); one on
    no path still binds nothing."""
    site = tmp_path / "site"
    kernel = tmp_path / "app" / "kernels.py"
    kernel.parent.mkdir()
    kernel.write_text(_package(site, "from pkg.helpers import twice").read_text())
    with pytest.raises(NotExtractable, match="names twice"):
        extract(kernel.read_bytes(), str(kernel))
    monkeypatch.syspath_prepend(str(site))
    module = extract(kernel.read_bytes(), str(kernel))
    assert module.kernels == {"k"} and module.followed == (str(site / "pkg" / "helpers.py"),)


@pytest.mark.parametrize("call", ["twice", "double"], ids=["a kernel", "another name for one"])
def test_jit_functions_star_imported_from_another_file_of_the_package_are_read_from_it(
        tmp_path, call):
    """gemlite's kernel files take their tile helpers by `from .utils import *`, one of them
    under another name (`swizzle_tile = swizzle_tile_v1`): the judge bound nothing for a star
    import nor for a kernel's second name, and RES-02 left every gemlite GEMM undecided on
    the CPU. The file is read as one imported by name is; the second name is the kernel."""
    kernel = _package(tmp_path, "from ..helpers import *", call)
    module = extract(kernel.read_bytes(), str(kernel))
    assert module.kernels == {"k"} and module.followed == (str(tmp_path / "pkg" / "helpers.py"),)
    rebuilt = _load(module.text, tmp_path / "rebuilt.py")
    helper = getattr(rebuilt.k, "fn", rebuilt.k).__globals__[call]
    assert getattr(helper, "fn", helper).__name__.endswith("twice")


@pytest.mark.parametrize("kernel_import, call", [
    ("from .. import helpers as hp", "hp.twice"), ("from pkg import helpers", "helpers.twice"),
], ids=["relative", "absolute, inside the package"])
def test_a_jit_function_named_through_a_module_of_the_package_is_read_from_it(
        tmp_path, kernel_import, call):
    """FlagGems' kernels call `tle.program_id(0)`, `tle` a file of jit functions imported as a
    module (`from flag_gems.utils import triton_lang_extension as tle`): the judge refused to
    build their module, and RES-02 left FlagGems' softmax, layer_norm, mm, argmax and rms_norm
    undecided on the CPU. The file is read as one imported by name is, and `hp.twice` names the
    judge's copy of `twice`."""
    kernel = _package(tmp_path, kernel_import, call)
    module = extract(kernel.read_bytes(), str(kernel))
    assert module.kernels == {"k"} and module.followed == (str(tmp_path / "pkg" / "helpers.py"),)
    assert "torch" not in module.text and call not in module.text
    rebuilt = _load(module.text, tmp_path / "rebuilt.py")
    k = getattr(rebuilt.k, "fn", rebuilt.k)
    linked = [name for name in k.__code__.co_names if name.endswith("twice")]
    assert len(linked) == 1 and linked[0] != "twice"  # the prefixed copy, by its own name
    helper = k.__globals__[linked[0]]
    assert getattr(helper, "fn", helper).__globals__[linked[0][:-len("twice")] + "BLOCK"].value \
        == 3.0


@pytest.mark.parametrize("body, why", [
    ("h = hp\n    x = h.twice(x)", "names hp"),  # the module held as a value
    ("x = hp.absent(x)", "names hp.absent, from helpers.py: absent is not a top-level"),
    ("x = hp._private(x)", "a private attribute"),
])
def test_a_module_of_the_package_is_reached_only_through_its_jit_functions(tmp_path, body, why):
    kernel = _package(tmp_path, "from .. import helpers as hp", "hp.twice")
    kernel.write_text(kernel.read_text().replace(
        "    tl.store(", f"    {body}\n    tl.store("))
    with pytest.raises(NotExtractable, match=why):
        extract(kernel.read_bytes(), str(kernel))


def test_a_followed_file_that_needs_more_is_named(tmp_path):
    kernel = _package(tmp_path, "from ..helpers import twice")
    helpers = tmp_path / "pkg" / "helpers.py"
    helpers.write_text(helpers.read_text().replace("return x * BLOCK", "return x * CONFIGS[0]"))
    with pytest.raises(NotExtractable, match="k: names twice, from helpers.py: scale: names "
                                             "CONFIGS"):
        extract(kernel.read_bytes(), str(kernel))


def test_a_kernel_the_judge_cannot_build_leaves_the_files_other_kernels_built(tmp_path):
    """A helper file (fla's `fla/ops/utils/op.py`) whose `logaddexp` names what the judge
    cannot build (here an `exp` made by a call) was refused whole, and with it
    `unflatten_program_id`, which fla's cumsum kernels call: RES-02 left fla's sigmoid, swish
    and cumsums undecided. Now a kernel is refused alone, with every kernel that calls it,
    and named with its reason when asked for."""
    from kdiff.sandbox.launches import extracted_kernels
    kernel = _package(tmp_path, "from ..helpers import twice")
    helpers = tmp_path / "pkg" / "helpers.py"
    helpers.write_text(helpers.read_text() + (
        "exp = make_exp()\n"
        "@triton.jit\ndef logaddexp(a, b):\n    return exp(a) + exp(b)\n"
        "@triton.jit\ndef uses_it(a):\n    return logaddexp(a, a)\n"))
    kernel.write_text(kernel.read_text() + (
        "from ..helpers import logaddexp\n"
        "@triton.jit\ndef k2(x_ptr):\n    tl.store(x_ptr, logaddexp(tl.load(x_ptr), 0.))\n"))
    module = extract(kernel.read_bytes(), str(kernel))
    assert module.kernels == {"k"} and "logaddexp" not in module.text
    assert "twice" in module.text and "k2" not in module.text
    assert dict(module.refused)["k2"].startswith("k2: names logaddexp, from helpers.py: "
                                                 "logaddexp: names exp")
    assert extracted_kernels(str(kernel), {"k"}) == module
    assert "names exp" in extracted_kernels(str(kernel), {"k", "k2"})
    rebuilt = _load(module.text, tmp_path / "rebuilt.py")
    assert hasattr(rebuilt, "k") and not hasattr(rebuilt, "k2")
    kernel.write_text(kernel.read_text().replace("def k(", "def k0(").replace(
        "twice(x)", "logaddexp(x, x)"))
    with pytest.raises(NotExtractable, match="names logaddexp, from helpers.py"):
        extract(kernel.read_bytes(), str(kernel))  # none of its kernels can be built


SWITCHED_HELPERS = (
    "import os\nimport triton\nimport triton.language as tl\n"
    "if os.environ.get('FAST_OPS', '0') == '1':\n"
    "    @triton.jit\n    def exp(x): return tl.exp2(x * 1.4426950408889634)\n"
    "else:\n"
    "    @triton.jit\n    def exp(x): return tl.exp(x)\n"
    "try:\n    BLOCK = tl.constexpr(128)\nexcept ImportError:\n    BLOCK = tl.constexpr(64)\n"
    "@triton.jit\ndef plain(x):\n    return x + 1\n")


def test_jit_functions_a_module_level_switch_defines_are_built_every_way(tmp_path):
    """fla's `fla/ops/utils/op.py` defines `exp` fast or not by an environment variable, which
    the candidate's process reads (and may set): the judge cannot know which way it went, so
    it builds each, and RES-02 compiles a kernel every way that changes what it reaches."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "op.py").write_text(SWITCHED_HELPERS)
    kernel = pkg / "kernels.py"
    kernel.write_text(
        "import triton\nimport triton.language as tl\nfrom .op import exp, plain\n"
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, exp(tl.load(x_ptr)))\n"
        "@triton.jit\ndef k_plain(x_ptr):\n    tl.store(x_ptr, plain(tl.load(x_ptr)))\n")
    module = extract(kernel.read_bytes(), str(kernel))
    assert module.kernels == {"k", "k_plain"} and not module.refused
    texts = [text for text, _ in module.variants()]
    # two ways through the `if`; the `try`'s BLOCK, which no kernel reaches, its first way
    assert len(texts) == 2
    assert sum("tl.exp2(" in t for t in texts) == 1 and sum("tl.exp(" in t for t in texts) == 1
    ways = module.ways()
    assert [sorted(kernels) for _, kernels in ways] == [["k", "k_plain"], ["k"]]
    for n, (text, _) in enumerate(ways):
        rebuilt = _load(text, tmp_path / f"way{n}.py")
        assert hasattr(rebuilt, "k")


def test_a_switch_whose_other_way_cannot_be_built_keeps_the_way_that_can(tmp_path):
    """A branch the judge cannot build (a definition by a call) is a way the candidate's
    process could not have run the kernel by: the kernel is built the other way."""
    helpers = SWITCHED_HELPERS.replace(
        "    @triton.jit\n    def exp(x): return tl.exp(x)\n", "    exp = make_exp()\n")
    kernel = tmp_path / "kernels.py"
    kernel.write_text(helpers + "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, exp(tl.load(x_ptr)))\n")
    module = extract(kernel.read_bytes(), str(kernel))
    assert "k" in module.kernels
    assert all("tl.exp2(" in text for text, kernels in module.ways() if "k" in kernels)


def test_a_kernel_a_switch_of_its_own_file_defines_is_built_from_either_branch(tmp_path):
    """A launch names a kernel of its own file: a kernel under a module-level switch there is
    built whichever branch defines it, though nothing else in the file names it."""
    kernel = tmp_path / "kernels.py"
    kernel.write_text(
        "import os\nimport triton\nimport triton.language as tl\n"
        "if os.environ.get('OLD_GPU') == '1':\n"
        "    @triton.jit\n    def old_only(x_ptr):\n        tl.store(x_ptr, 1.0)\n"
        "else:\n"
        "    @triton.jit\n    def new_only(x_ptr):\n        tl.store(x_ptr, 2.0)\n")
    module = extract(kernel.read_bytes(), str(kernel))
    built = set().union(*(kernels for _, kernels in module.variants()))
    assert built == {"old_only", "new_only"}


def test_a_definition_that_chooses_by_a_conditional_expression_is_built_both_ways(tmp_path):
    """fla writes `SAFE_GATE_DOT_PRECISION = tl.constexpr('bf16x3' if TRITON_ABOVE_3_6_0 else
    'ieee')` and `@triton.jit(do_not_specialize=[...] if IS_NVIDIA_HOPPER else [...])` on
    flags of its own: each is a switch of two ways. A kernel body's own conditional
    expressions are Triton code, left as they are."""
    kernel = tmp_path / "kernels.py"
    kernel.write_text(
        "import triton\nimport triton.language as tl\nfrom .flags import NEW, HOPPER\n"
        "PRECISION = tl.constexpr('tf32' if NEW else 'ieee')\n"
        "@triton.jit(do_not_specialize=['n'] if HOPPER else [])\n"
        "def k(x_ptr, n):\n"
        "    x = tl.load(x_ptr) if PRECISION == 'tf32' else 0.0\n"
        "    tl.store(x_ptr, x + n)\n")
    module = extract(kernel.read_bytes(), str(kernel))
    texts = [text for text, kernels in module.variants() if "k" in kernels]
    assert len(texts) == 4
    assert sum("tl.constexpr('tf32')" in t for t in texts) == 2
    assert sum("do_not_specialize=['n']" in t for t in texts) == 2
    assert all("tl.load(x_ptr) if PRECISION == 'tf32' else 0.0" in t for t in texts)


def test_too_many_ways_to_try_name_why_the_first_did_not_build():
    """A file whose first way does not build, with more switches than can be tried instead,
    is refused with that way's reason, not only the count (unsloth's cross-entropy: its first
    way's reason hidden behind thirteen switches)."""
    switches = "".join(f"try:\n    from lib{n} import F{n}\nexcept ImportError:\n"
                       f"    F{n} = None\n" for n in range(7))
    text = ("import triton\nimport triton.language as tl\n" + switches +
            "@triton.jit\ndef k(x):\n    tl.store(x, F0(tl.load(x)))\n")
    with pytest.raises(NotExtractable, match="more than 64 combinations.*; the first way: k: names F0"):
        extract(text.encode(), "k.py")


def test_switches_of_the_kernel_s_own_file_that_no_kernel_reaches_are_taken_one_way(tmp_path):
    """unsloth's fp8.py guards its optional imports at module level (`try: from transformers...
    import FP8Linear` / `except: FP8Linear = None`, thirteen switches with nested ones) around
    kernels that reach none of them: 2^13 combinations of the same kernels, which RES-02
    refused to build ("more than 64 combinations"). A switch defining what a kernel reaches
    is still built every way."""
    optional = "".join(f"try:\n    from lib{n} import Layer{n}\nexcept ImportError:\n"
                       f"    Layer{n} = None\n" for n in range(7))
    kernel = tmp_path / "kernels.py"
    kernel.write_text(
        "import os\nimport triton\nimport triton.language as tl\n" + optional +
        "if os.environ.get('WIDE') == '1':\n    SCALE = tl.constexpr(2.0)\n"
        "else:\n    SCALE = tl.constexpr(4.0)\n"
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.load(x_ptr) * SCALE)\n")
    module = extract(kernel.read_bytes(), str(kernel))
    texts = [text for text, kernels in module.variants() if "k" in kernels]
    assert len(texts) == 2
    assert sum("tl.constexpr(2.0)" in t for t in texts) == 1
