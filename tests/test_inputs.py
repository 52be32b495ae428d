"""Input generators keep the problem's structure and preconditions."""
import torch

from kdiff.data.problem import load_problem
from kdiff.judging.context import GateContext
from kdiff.numerics import inputs as gen


def write_problem(tmp_path, body):
    path = tmp_path / "p.py"
    path.write_text("import torch\nclass Model(torch.nn.Module):\n"
                    "    def forward(self, *a):\n        return a[0]\n" + body)
    return load_problem(path)


def test_structural_positions_and_integer_inputs_are_kept(tmp_path):
    problem = write_problem(tmp_path, (
        "def get_inputs():\n"
        "    return [torch.triu(torch.randn(6, 6)), torch.randint(0, 5, (3,))]\n"))
    templates = gen.learn_templates(problem)
    lower = torch.ones(6, 6, dtype=torch.bool).tril(-1)
    assert bool(templates[0].structural[lower].all())
    assert not bool(templates[0].structural[~lower].any())
    assert not templates[1].floating
    x, idx = gen.realize(templates, gen.scaled(gen.normal(), 1e3), seed=3)
    assert bool((x[lower] == 0).all())
    assert bool((x[~lower].abs() > 1e-3).all())  # drawn at scale 1e3, not the benchmark's
    assert torch.equal(idx, templates[1].example)


def test_templates_are_learned_once_for_each_set_of_sizes(tmp_path, monkeypatch):
    """A gate goes back to the judged sizes after its own: the templates learned there
    before serve again, and those of other sizes are their own."""
    problem = write_problem(tmp_path, "n = 8\ndef get_inputs():\n    return [torch.randn(n)]\n")
    learned, learn = [], gen.learn_templates
    monkeypatch.setattr(gen, "learn_templates",
                        lambda p: learned.append(p.constants()) or learn(p))
    ctx = GateContext(problem, None)
    judged = ctx.templates()
    ctx.set_constants({"n": 4})
    assert ctx.templates()[0].example.shape == (4,)
    ctx.set_constants({})
    assert ctx.templates() is judged
    assert learned == [{"n": 8}, {"n": 4}]


def test_probability_inputs_stay_distributions(tmp_path):
    problem = write_problem(tmp_path, (
        "def get_inputs():\n"
        "    return [torch.randn(4, 8).softmax(-1)]\n"))
    (x,) = gen.realize(gen.learn_templates(problem), gen.normal(), seed=1)
    assert bool((x >= 0).all())
    assert torch.allclose(x.sum(-1), torch.ones(4))


def test_inputs_always_in_ascending_order_stay_so(tmp_path):
    """Bucket boundaries (what searchsorted and bucketize require) are drawn sorted; a
    random input, and a sorted one of two values (in order by chance too often), are not."""
    problem = write_problem(tmp_path, (
        "def get_inputs():\n"
        "    return [torch.randn(64), torch.sort(torch.randn(31)).values,\n"
        "            torch.sort(torch.randn(5, 7), dim=0).values, torch.sort(torch.randn(2)).values]\n"))
    templates = gen.learn_templates(problem)
    assert [t.sorted_dim for t in templates] == [None, 0, 0, None]
    x, boundaries, columns, _ = gen.realize(templates, gen.heavy_tailed(), seed=4)
    assert bool((boundaries.diff() >= 0).all()) and bool((columns.diff(dim=0) >= 0).all())
    assert not bool((x.diff() >= 0).all())


def test_strategies_are_reproducible_and_distinct():
    a = gen.with_outliers(gen.normal())((100,), torch.Generator().manual_seed(5))
    b = gen.with_outliers(gen.normal())((100,), torch.Generator().manual_seed(5))
    c = gen.heavy_tailed()((100,), torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_a_gram_matrix_off_by_its_rounding_is_still_positive_definite(tmp_path):
    """A product's kernel may sum entry (i, j) in another order than (j, i) (AVX-512 CPU
    kernels, GPU ones): a Gram matrix is then symmetric only up to its rounding, and is still
    what a cholesky needs. Here its upper triangle is one ulp off, on every machine."""
    problem = write_problem(tmp_path, (
        "def get_inputs():\n"
        "    g = torch.randn(64, 64)\n"
        "    a = g @ g.T + torch.eye(64)\n"
        "    off = torch.triu(torch.nextafter(a, torch.full_like(a, float('inf'))), 1)\n"
        "    return [torch.tril(a) + off, torch.randn(64, 64)]\n"))
    templates = gen.learn_templates(problem)
    assert [t.matrix for t in templates] == [gen.MatrixStructure.POSITIVE_DEFINITE, None]
    spd, _ = gen.realize(templates, gen.COVERAGE[0], seed=3)
    assert torch.equal(spd, spd.T) and int(torch.linalg.cholesky_ex(spd).info) == 0


def test_probabilities_stay_normalised_whatever_their_rounding(tmp_path):
    """Rows of probabilities sum to one only up to their rounding: stored in bf16 by about
    2^-9, and summed over 32768 classes in fp32 by up to n u. Both stay distributions; a
    non-negative input whose rows sum elsewhere does not become one."""
    problem = write_problem(tmp_path, (
        "def get_inputs():\n"
        "    return [torch.randn(4, 1000).softmax(-1).to(torch.bfloat16),\n"
        "            torch.randn(2, 32768).mul(4).softmax(-1), torch.rand(4, 1000)]\n"))
    templates = gen.learn_templates(problem)
    assert [t.normalized_dim for t in templates] == [1, 1, None]
    low, long_rows, _ = gen.realize(templates, gen.COVERAGE[0], seed=2)
    for x in (low, long_rows):
        assert float((x.double().sum(-1) - 1).abs().max()) <= gen.normalization_tolerance(
            x.shape[-1], x.dtype)


def test_noncontiguous_keeps_values():
    x = torch.randn(3, 5)
    y = gen.noncontiguous(x)
    assert not y.is_contiguous() and torch.equal(x, y)


def test_symmetric_and_positive_definite_matrices_stay_so(tmp_path):
    """A relation between positions, not a fixed value: every draw of every strategy keeps it
    (a cholesky refuses a matrix that is not positive definite; a kernel may assert A = A^T)."""
    problem = write_problem(tmp_path, (
        "def get_inputs():\n"
        "    m = torch.randn(2, 5, 5)\n"
        "    g = torch.randn(5, 5)\n"
        "    return [m + m.transpose(-1, -2), g @ g.T + 5 * torch.eye(5), torch.randn(5, 5),\n"
        "            torch.ones(5, 5)]\n"))
    templates = gen.learn_templates(problem)
    assert [t.matrix for t in templates] == [gen.MatrixStructure.SYMMETRIC,
                                            gen.MatrixStructure.POSITIVE_DEFINITE, None, None]
    for strategy in gen.COVERAGE:
        symmetric, spd, free, _ = gen.realize(templates, strategy, seed=7)
        assert torch.equal(symmetric, symmetric.transpose(-1, -2)), strategy.name
        assert torch.equal(spd, spd.T), strategy.name
        assert int(torch.linalg.cholesky_ex(spd.double()).info) == 0, strategy.name
        assert int(torch.linalg.cholesky_ex(spd).info) == 0, strategy.name  # in fp32 itself
        assert not torch.equal(free, free.T)


def test_each_chosen_draw_has_a_seed_of_its_own_that_no_search_over_torchs_reaches():
    """Draws at one seed share torch's stream (a normal is the Box-Muller of the uniforms the
    seed gives), and torch seeds its CPU generator with 32 bits: a candidate shown one chosen
    draw found the verdict's seed and made every other (hostile/recovers_the_chosen_seed.py).
    Each chosen draw now takes a seed of its own, keyed by the verdict's, that sets the
    generator's whole state; fixed seeds draw what torch's seeding draws."""
    from kdiff.data.seeding import WIDE_SEEDS, generator
    from kdiff.gates.base import Seed

    chosen = Seed((1 << 20) + 1206, chosen=True)
    first, second = chosen.of("PRC-03 normal x100 float32"), chosen.of("ORD-01 uniform")
    assert first != second and min(first, second) >= WIDE_SEEDS
    assert chosen.of("PRC-03 normal x100 float32") == first  # --chosen-seed draws it again
    assert Seed(chosen.value + 1, chosen=True).of("ORD-01 uniform") != second

    def uniforms(g):
        return torch.rand(32, generator=g, dtype=torch.float64)

    # a normal draw's uniforms: 1 - exp(-r^2 / 2) over its Box-Muller pairs (j, j + 8)
    z = torch.randn(32, generator=generator(first), dtype=torch.float64)
    shown = 1 - torch.exp(-(z[:8] ** 2 + z[8:16] ** 2) / 2)
    assert torch.allclose(shown, uniforms(generator(first))[:8])
    assert not torch.allclose(shown, uniforms(generator(second))[:8])
    for seed in (first, second):  # torch's own seeding at the low 32 bits draws another
        low = torch.Generator().manual_seed(seed % WIDE_SEEDS)
        assert not torch.equal(uniforms(generator(seed)), uniforms(low))
    assert torch.equal(uniforms(generator(500)), uniforms(torch.Generator().manual_seed(500)))
