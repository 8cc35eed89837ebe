"""Degenerate edits of a drill's code, made mechanically: what fix-it mode must reject.

Each mutant silences a symptom without fixing the bug, or stops the code doing its job: the loop
deleted, the backward or the step deleted, a constant loss (or a constant result), everything
detached, every parameter of a module (or one parameter) frozen with ``requires_grad_(False)``, an
early return in a function, ``torch.no_grad()`` around the work, and, made on the *buggy* code, the
error hidden in ``try``/``except``. ``mutants(drill, names)`` yields ``(label, code)``; ``names``
are the parameter keys ("model.head.weight") the fixed code trains, from ``fixit.reference``.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from course_utils.drills.core import Drill


def _body_start(tree: ast.Module) -> int:
    """Index of the first statement after the imports."""
    return next((i for i, s in enumerate(tree.body) if not isinstance(s, (ast.Import, ast.ImportFrom))),
                len(tree.body))


def _loops(tree: ast.Module) -> list[int]:
    return [i for i, s in enumerate(tree.body) if isinstance(s, (ast.For, ast.While))]


def _parse(code: str) -> ast.Module:
    return ast.parse(code)


def _stmt(text: str) -> list[ast.stmt]:
    return ast.parse(text).body


def _calls(node: ast.AST, attr: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == attr
               for n in ast.walk(node))


class _Drop(ast.NodeTransformer):
    """Drop every statement that calls ``.attr(...)`` (an emptied block gets ``pass``)."""

    def __init__(self, attr: str):
        self.attr = attr

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                kept = [s for s in block if not (isinstance(s, ast.Expr) and _calls(s, self.attr))]
                setattr(node, name, kept or [ast.Pass()])
        return node


def _after_assign(tree: ast.Module, target: str, text: str) -> bool:
    """Insert ``text`` after every assignment to ``target``; whether there was one."""
    found = False
    for node in ast.walk(tree):
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            out = []
            for s in block:
                out.append(s)
                if isinstance(s, ast.Assign) and any(isinstance(n, ast.Name) and n.id == target
                                                     for t in s.targets for n in ast.walk(t)):
                    out += _stmt(text)
                    found = True
            setattr(node, name, out)
    return found


def _training_loops(tree: ast.Module) -> list[int]:
    """The top-level loops that call ``.backward()`` or ``.step()`` (not a loop that initialises)."""
    return [i for i in _loops(tree) if _calls(tree.body[i], "backward") or _calls(tree.body[i], "step")]


def _wrap_work(tree: ast.Module, head: str) -> ast.Module:
    """The training loops' bodies (or, with none, everything after the imports) inside ``head``."""
    wrapper = _stmt(f"{head}\n    pass\n" + ("except Exception:\n    pass" if head == "try:" else ""))[0]
    loops = _training_loops(tree)
    if loops:
        for i in loops:
            inner = copy.deepcopy(wrapper)
            inner.body = tree.body[i].body
            tree.body[i].body = [inner]
    else:
        start = _body_start(tree)
        wrapper.body = tree.body[start:] or [ast.Pass()]
        tree.body[start:] = [wrapper]
    return tree


def _binds(stmt: ast.stmt, name: str) -> bool:
    """Whether a top-level statement binds ``name`` (an assignment to it, or a loop over it)."""
    targets = (stmt.targets if isinstance(stmt, ast.Assign) else
               [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For)) else [])
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _freeze(tree: ast.Module, line: str, module: str) -> ast.Module:
    """``line`` inserted once ``module`` exists: before the first loop after the statement that
    binds it, else right after that statement (or, unbound at the top level, before the first
    loop or the last statement)."""
    bound = [i for i, s in enumerate(tree.body) if _binds(s, module)]
    loops = [i for i in _loops(tree) if not bound or i > bound[0]]
    at = loops[0] if loops else bound[-1] + 1 if bound else len(tree.body) - 1
    tree.body[at:at] = _stmt(line)
    return tree


def _results(drill: Drill) -> list[str]:
    """The names the fixed code assigns outside functions (a computation's results)."""
    from course_utils.drills.fixit import assigned_names

    return sorted(assigned_names(drill.fixed_code))


def mutants(drill: Drill, names: list[str], results: list[str] | None = None) -> Iterator[tuple[str, str]]:
    """``(label, code)`` for every degenerate edit of ``drill``'s fixed (or buggy) code; ``results``
    are the names a computation's constants replace (default: every name it assigns)."""
    fixed = drill.fixed_code
    if _loops(_parse(fixed)):
        tree = _parse(fixed)
        for i in _loops(tree):
            tree.body[i] = ast.Pass()
        yield "delete the loop", ast.unparse(tree)
    for attr in ("backward", "step"):
        if _calls(_parse(fixed), attr):
            yield f"delete every .{attr}()", ast.unparse(_Drop(attr).visit(_parse(fixed)))
    tree = _parse(fixed)
    if _after_assign(tree, "loss", "loss = torch.zeros((), requires_grad=True)"):
        yield "a constant loss", ast.unparse(tree)
        tree = _parse(fixed)
        _after_assign(tree, "loss", "loss = loss.detach().requires_grad_()")
        yield "detach the loss", ast.unparse(tree)
    for result in ([] if names else results if results is not None else _results(drill)):
        tree = _parse(fixed)
        if _after_assign(tree, result, f"{result} = ([torch.zeros_like(t) for t in {result}] "
                                       f"if isinstance({result}, list) else torch.zeros_like({result}))"):
            yield f"a constant {result}", ast.unparse(tree)
    if not names:  # a computation: every statement of it matters
        tree = _parse(fixed)
        for i in range(_body_start(tree), len(tree.body)):
            dropped = _parse(fixed)
            line = ast.unparse(dropped.body[i]).splitlines()[0]
            dropped.body[i] = ast.Pass()
            yield f"drop {line[:40]}", ast.unparse(dropped)
    modules = sorted({n.split(".")[0] for n in names})
    for module in modules:
        yield (f"{module}: every parameter requires_grad_(False)",
               ast.unparse(_freeze(_parse(fixed), f"{module}.requires_grad_(False)", module)))
    for name in names:
        module, _, param = name.partition(".")
        line = f"{module}.get_parameter({param!r}).requires_grad_(False)"
        yield f"{name}.requires_grad_(False)", ast.unparse(_freeze(_parse(fixed), line, module))
    for fn in [n for n in ast.walk(_parse(fixed)) if isinstance(n, ast.FunctionDef)]:
        tree = _parse(fixed)
        target = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == fn.name)
        args = [a.arg for a in target.args.args if a.arg != "self"]
        target.body[:0] = _stmt(f"return {args[0] if args else 'None'}")
        yield f"early return in {fn.name}()", ast.unparse(tree)
    if names:  # a computation that trains nothing is the same under no_grad
        wrapped = _wrap_work(_parse(fixed), "with torch.no_grad():")
        yield "torch.no_grad() around the work", ast.unparse(wrapped)
    hidden = _wrap_work(_parse(drill.buggy_code), "try:")
    yield "the buggy code with its error hidden in try/except", ast.unparse(hidden)
    yield from dodges(drill)


def dodges(drill: Drill) -> Iterator[tuple[str, str]]:
    """The drill's own degenerate edits (``fixit_cases.DODGES``): edits of its buggy code that a
    learner might try to silence the symptom without fixing the bug (lr=0, a mask of all ones...)."""
    from course_utils.drills.fixit_cases import DODGES

    for label, old, new in DODGES.get(drill.id, ()):
        if old not in drill.buggy_code:
            raise ValueError(f"{drill.id}: the dodge {label!r} edits {old!r}, not in the buggy code")
        yield label, drill.buggy_code.replace(old, new)


def score(drill: Drill) -> list[tuple[str, str, bool, str]]:
    """Run every fix and mutant of ``drill`` (form 0) through fix-it's judge, in this process:
    rows of (kind, label, accepted, why). Kinds: "declared fix", "other fix", "degenerate", and
    "equivalent" for an automatic edit declared to change nothing (``fixit_cases.EQUIVALENT``)."""
    from course_utils.drills.fixit import judge_edit, reference, tensors_of
    from course_utils.drills.fixit_cases import EQUIVALENT

    ref_run, trained = reference(drill)
    names = [k for k, (moved, grad) in trained.items() if moved or grad]
    tensors = [n for n in _results(drill) if tensors_of(ref_run.namespace.get(n)) is not None]
    rows = []
    fixes = [("declared fix", "the drill's own fix", drill.fixed_code)]
    fixes += [("other fix", f"other fix {i}", code) for i, code in enumerate(drill.other_fix_codes(), 1)]
    same = EQUIVALENT.get(drill.id, {})
    fixed = ast.unparse(_parse(drill.fixed_code))
    for label, code in mutants(drill, names, tensors):
        if ast.unparse(_parse(code)) == fixed:  # an edit that changed nothing is no mutant
            continue
        fixes.append(("equivalent" if label in same else "degenerate", label, code))
    for kind, label, code in fixes:
        verdict = judge_edit(drill, code)
        why = same.get(label, "") if kind == "equivalent" else (verdict.problems or ("",))[0]
        rows.append((kind, label, verdict.passed, why))
    return rows


def table(drill_id: str, rows: list[tuple[str, str, bool, str]]) -> str:
    """One drill's rows as text, with its verdict: every fix (and every declared equivalent)
    accepted, every degenerate edit rejected."""
    ok = all(accepted == (kind != "degenerate") for kind, _, accepted, _ in rows)
    count = {k: sum(1 for kind, *_ in rows if kind == k) for k in ("declared fix", "other fix",
                                                                    "equivalent", "degenerate")}
    same = f", {count['equivalent']} declared equivalent" if count["equivalent"] else ""
    lines = [f"{drill_id}: {'ok' if ok else 'FAILS'} ({count['declared fix'] + count['other fix']} "
             f"fixes accepted, {count['degenerate']} degenerate edits rejected{same})"]
    for kind, label, accepted, why in rows:
        verdict = "accepted" if accepted else "rejected"
        wrong = " <- wrong" if accepted == (kind == "degenerate") else ""
        shown = f": {why[:80]}" if why and (not accepted or kind == "equivalent") else ""
        lines.append(f"  {kind:<13}{verdict:<10}{label}{wrong}{shown}")
    return "\n".join(lines)


def report(ids: list[str]) -> int:
    """``course mutants --drills [ID...]``: print each fix-it drill's table (all by default);
    0 when every fix is accepted and every degenerate edit rejected, else 1."""
    import sys

    from course_utils import drills

    chosen = ids or [d.id for d in drills.all_drills() if d.other_fixes]
    ok = True
    for i, drill_id in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] {drill_id}", file=sys.stderr, flush=True)
        rows = score(drills.get(drill_id))
        ok &= all(accepted == (kind != "degenerate") for kind, _, accepted, _ in rows)
        print(table(drill_id, rows) + "\n")
    return 0 if ok else 1
