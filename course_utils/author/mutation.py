"""Automatic mutants of an exercise's reference: mutation testing, run on the bank.

Hand-written mutants are the authors' guesses at wrong answers; these are generated mechanically
from the reference's source, in the spirit of mutmut and cosmic-ray. Each mutant changes one
thing (the operators are in ``course_utils.author.mutation_ops``): a comparison or arithmetic
operator, a constant (±1, 0 ↔ 1, 0 ↔ -1 for dims and indexes, True ↔ False for keepdim),
the order of two arguments, one statement dropped, an early return, in-place ↔ out-of-place,
``.contiguous()`` / ``.detach()`` / ``no_grad`` dropped or added, a reduction swapped.

An exercise's check must kill (reject) its mutants; a survivor is either killed by a new case or
declared in the exercise's ``equivalent`` mapping, key -> a one-line reason why it computes the
same thing as the reference on every valid input.
"""

from __future__ import annotations

import ast
import copy
import inspect
import signal
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from course_utils.author.mutation_ops import GRADIENT_PROSE, GRADIENT_WORDS, sites
from course_utils.core.exercise import Exercise

SEEDS = (0, 1)  # a mutant is killed when check() rejects it with either seed
TIME_PER_MUTANT_S = 10.0  # a mutant still running after this counts as an endless run (killed)
# A declared equivalent must finish, so it gets this many times the limit: on a loaded machine a
# slow one would otherwise count as killed and its declaration as "stale".
EQUIVALENT_PATIENCE = 10


@dataclass(frozen=True)
class Mutant:
    """One generated wrong answer: a stable key (what changed) and the function."""

    key: str
    fn: Callable


def _function_tree(reference: Callable) -> ast.Module:
    source = textwrap.dedent(inspect.getsource(reference))
    tree = ast.parse(source)
    func = tree.body[0]
    if not isinstance(func, ast.FunctionDef):
        raise TypeError(f"{reference.__qualname__} is not a plain function")
    func.decorator_list = []
    return tree


def _code_text(tree: ast.Module) -> str:
    """The function's source without its docstring: prose ("weights, grads and state") does not
    make integer arithmetic worth no_grad / detach mutants (``GRADIENT_PROSE`` is what does)."""
    bare = copy.deepcopy(tree)
    func = bare.body[0]
    if func.body and isinstance(func.body[0], ast.Expr) and isinstance(
            getattr(func.body[0], "value", None), ast.Constant) and len(func.body) > 1:
        func.body = func.body[1:]
    return ast.unparse(bare)


def _replace(tree: ast.AST, target: ast.AST, new: ast.AST | list[ast.stmt]) -> None:
    """Put ``new`` where ``target`` stands in ``tree`` (a list of statements splices in)."""
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, name, new)
                return
            if isinstance(value, list) and any(item is target for item in value):
                index = next(i for i, item in enumerate(value) if item is target)
                value[index:index + 1] = new if isinstance(new, list) else [new]
                return
    raise LookupError("mutation site not found")


def _compile(tree: ast.Module, reference: Callable, key: str) -> Callable:
    ast.fix_missing_locations(tree)
    namespace: dict = {}
    code = compile(tree, f"<automatic mutant of {reference.__qualname__}: {key}>", "exec")
    exec(code, reference.__globals__, namespace)  # noqa: S102 - the bank's own source, mutated
    return namespace[reference.__name__]


def mutants_of(reference: Callable) -> list[Mutant]:
    """Every automatic mutant of ``reference`` (keys unique; none that fail to compile)."""
    original = _function_tree(reference)
    code, docstring = _code_text(original), ast.get_docstring(original.body[0]) or ""
    about_gradients = (any(word in code for word in GRADIENT_WORDS)
                       or any(word in docstring for word in GRADIENT_PROSE))
    count = len(list(ast.walk(original)))
    found: dict[str, Mutant] = {}
    for index in range(count):
        node = list(ast.walk(original))[index]
        for label, build in sites(node, about_gradients=about_gradients):
            tree = copy.deepcopy(original)
            target = list(ast.walk(tree))[index]
            try:
                _replace(tree, target, build(target))
                fn = _compile(tree, reference, label)
            except (LookupError, SyntaxError, TypeError, ValueError):
                continue
            key, n = label, 2
            while key in found:
                key, n = f"{label} #{n}", n + 1
            found[key] = Mutant(key, fn)
    return list(found.values())


class MutantTimeout(Exception):
    """A mutant ran past its time limit (an endless loop): it counts as killed."""


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise MutantTimeout()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def is_killed(exercise: Exercise, fn: Callable, seeds: tuple[int, ...] = SEEDS,
              limit_s: float | None = None) -> bool:
    """Whether ``check()`` rejects ``fn`` (any failure, error, or a run past ``limit_s``, by default
    ``TIME_PER_MUTANT_S``)."""
    from course_utils.learner.checking import find_failure

    for seed in seeds:
        try:
            with _time_limit(TIME_PER_MUTANT_S if limit_s is None else limit_s):
                if find_failure(exercise, fn, seed) is not None:
                    return True
        except MutantTimeout:
            return True
    return False


@dataclass
class Score:
    """One exercise's mutation score."""

    exercise_id: str
    hand: int = 0
    hand_killed: int = 0
    generated: int = 0
    killed: int = 0
    equivalent: dict[str, str] = field(default_factory=dict)  # declared and surviving
    survivors: list[str] = field(default_factory=list)  # surviving and not declared
    stale: list[str] = field(default_factory=list)  # declared equivalent but killed or gone

    @property
    def ratio(self) -> float:
        """Killed among the non-equivalent automatic mutants."""
        judged = self.generated - len(self.equivalent)
        return 1.0 if judged <= 0 else self.killed / judged


def score(exercise: Exercise, sample: int | None = None, seeds: tuple[int, ...] = SEEDS) -> Score:
    """Run the exercise's hand mutants and its automatic mutants (all, or ``sample`` of them: every
    declared equivalent and an even spread of the rest) through ``check()``."""
    result = Score(exercise.id, hand=len(exercise.mutants))
    result.hand_killed = sum(is_killed(exercise, fn, seeds) for fn in exercise.mutants.values())
    generated = mutants_of(exercise.mutation_target or exercise.reference)
    keys = {m.key for m in generated}
    result.stale = [k for k in exercise.equivalent if k not in keys]
    if sample is not None and len(generated) > sample:  # the declared equivalents always run
        declared = [m for m in generated if m.key in exercise.equivalent]
        others = [m for m in generated if m.key not in exercise.equivalent]
        step = len(others) / max(1, sample - len(declared))
        generated = declared + [others[int(i * step)] for i in range(sample - len(declared))]
    result.generated = len(generated)
    for mutant in generated:
        patience = EQUIVALENT_PATIENCE if mutant.key in exercise.equivalent else 1
        if is_killed(exercise, mutant.fn, seeds, TIME_PER_MUTANT_S * patience):
            result.killed += 1
            if mutant.key in exercise.equivalent:
                result.stale.append(mutant.key)
        elif mutant.key in exercise.equivalent:
            result.equivalent[mutant.key] = exercise.equivalent[mutant.key]
        else:
            result.survivors.append(mutant.key)
    return result


def table(scores: list[Score]) -> str:
    """The report: one row per exercise, then every survivor and every declared equivalent."""
    head = (f"{'exercise':<26} {'hand':>9} {'automatic':>9} {'killed':>7} {'equiv':>6} "
            f"{'survive':>7} {'score':>6}")
    lines = [head, "-" * len(head)]
    for s in scores:
        lines.append(f"{s.exercise_id:<26} {s.hand_killed:>4}/{s.hand:<4} {s.generated:>9} "
                     f"{s.killed:>7} {len(s.equivalent):>6} {len(s.survivors):>7} {s.ratio:>6.0%}")
    total_gen = sum(s.generated for s in scores)
    total_killed = sum(s.killed for s in scores)
    lines.append(f"{'all':<26} {'':>9} {total_gen:>9} {total_killed:>7} "
                 f"{sum(len(s.equivalent) for s in scores):>6} {sum(len(s.survivors) for s in scores):>7}")
    for s in scores:
        lines += [f"  survivor  {s.exercise_id}: {key}" for key in s.survivors]
        lines += [f"  equivalent {s.exercise_id}: {key} ({why})" for key, why in s.equivalent.items()]
        lines += [f"  stale     {s.exercise_id}: {key} (declared equivalent, but killed or gone)"
                  for key in s.stale]
    return "\n".join(lines)
