"""The mutation operators: for one AST node, the ways to change it into a plausible wrong answer.

``sites(node)`` returns ``(label, build)`` pairs; ``build`` gets the same node in a fresh copy of
the tree and returns what replaces it (a node, or a list of statements). Labels describe the
change in source terms (``compare: `a < b` -> `a <= b```), so they stay the same when the file's
line numbers move, and an exercise can name a mutant it declares equivalent.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

Build = Callable[[ast.AST], "ast.AST | list[ast.stmt]"]

COMPARE_FLIPS = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}
ARITHMETIC_FLIPS = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Div, ast.Add), ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div, ast.Mod), ast.Mod: (ast.FloorDiv,), ast.Pow: (ast.Mult,),
}
REDUCTION_SWAPS = {
    "sum": "mean", "mean": "sum", "max": "amax", "amax": "max", "min": "amin", "amin": "min",
    "argmax": "argmin", "argmin": "argmax", "any": "all", "all": "any", "prod": "sum",
}
COMMUTATIVE = {"max", "min", "maximum", "minimum", "isclose", "allclose", "equal", "hypot", "gcd"}
OUT_OF_PLACE = {"add", "sub", "mul", "div", "clamp", "copy", "zero", "fill", "addcmul", "addcdiv",
                "masked_fill", "neg", "abs", "exp", "relu", "sigmoid", "t", "transpose"}


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - a label only
        return type(node).__name__


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _label(kind: str, old: ast.AST, new: ast.AST | list) -> str:
    after = "; ".join(_text(n) for n in new) if isinstance(new, list) else _text(new)
    return f"{kind}: `{_short(_text(old))}` -> `{_short(after)}`"


def _with(node: ast.AST, **changes) -> ast.AST:
    out = copy.copy(node)
    for name, value in changes.items():
        setattr(out, name, value)
    return out


def _compare(node: ast.Compare) -> list[tuple[ast.AST, Build]]:
    out = []
    for i, op in enumerate(node.ops):
        for alt in COMPARE_FLIPS.get(type(op), ()):
            def build(n, i=i, alt=alt):
                return _with(n, ops=[*n.ops[:i], alt(), *n.ops[i + 1:]])
            out.append(("compare", build))
    return out


def _binop(node: ast.BinOp | ast.AugAssign) -> list[tuple[str, Build]]:
    return [("arithmetic", lambda n, alt=alt: _with(n, op=alt()))
            for alt in ARITHMETIC_FLIPS.get(type(node.op), ())]


def _number(value: int) -> ast.expr:
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _constant(node: ast.Constant) -> list[tuple[str, Build]]:
    value = node.value
    if isinstance(value, bool):
        return [("constant", lambda n: ast.Constant(not n.value))]
    if isinstance(value, int):
        zero_one = [1, -1] if value == 0 else [0]
        alternatives = dict.fromkeys([value + 1, value - 1, *zero_one])
        return [("constant", lambda n, v=v: _number(v)) for v in alternatives if v != value]
    if isinstance(value, float) and value in (0.0, 1.0):
        return [("constant", lambda n: ast.Constant(1.0 - n.value))]
    return []


def _negative(node: ast.UnaryOp) -> list[tuple[str, Build]]:
    out = [("sign", lambda n: n.operand)]
    if isinstance(node.operand, ast.Constant) and node.operand.value == 1:
        out.append(("dim", lambda n: ast.Constant(0)))  # -1 -> 0: the other end of the dims
    return out


def _call(node: ast.Call) -> list[tuple[str, Build]]:
    out: list[tuple[str, Build]] = []
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if (len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2])
            and name not in COMMUTATIVE and _text(node.args[0]) != _text(node.args[1])):
        out.append(("swapped arguments", lambda n: _with(n, args=[n.args[1], n.args[0], *n.args[2:]])))
    if isinstance(func, ast.Attribute):
        if name in ("contiguous", "detach", "clone") and not node.args:
            out.append((f"{name} dropped", lambda n: n.func.value))
        if name.endswith("_") and not name.startswith("_"):
            out.append(("out-of-place", lambda n: _with(n, func=_with(n.func, attr=n.func.attr[:-1]))))
        elif name in OUT_OF_PLACE:
            out.append(("in-place", lambda n: _with(n, func=_with(n.func, attr=n.func.attr + "_"))))
    if name in REDUCTION_SWAPS:
        swap = REDUCTION_SWAPS[name]
        if isinstance(func, ast.Attribute):
            out.append(("reduction", lambda n, s=swap: _with(n, func=_with(n.func, attr=s))))
        else:
            out.append(("reduction", lambda n, s=swap: _with(n, func=ast.Name(s, ast.Load()))))
    for i, kw in enumerate(node.keywords):
        if kw.arg == "keepdim" and isinstance(kw.value, ast.Constant):
            continue  # the bool flip covers it
        if kw.arg is not None and kw.arg not in ("dim", "dtype", "device"):
            out.append(("keyword dropped",
                        lambda n, i=i: _with(n, keywords=n.keywords[:i] + n.keywords[i + 1:])))
    return out


def _returned(node: ast.Return) -> list[tuple[str, Build]]:
    if node.value is None:
        return []

    def wrap(attr: str) -> Build:
        return lambda n: _with(n, value=ast.Call(ast.Attribute(n.value, attr, ast.Load()), [], []))

    return [("detach added", wrap("detach")), ("contiguous added", wrap("contiguous"))]


def _with_block(node: ast.With) -> list[tuple[str, Build]]:
    names = [_text(item.context_expr) for item in node.items]
    if any("no_grad" in n or "inference_mode" in n for n in names):
        return [("no_grad dropped", lambda n: list(n.body))]
    return []


def _statement(node: ast.stmt, parent_body: bool) -> list[tuple[str, Build]]:
    if not parent_body or isinstance(node, ast.FunctionDef | ast.Return | ast.Pass):
        return []
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return []  # a docstring
    return [("statement dropped", lambda n: ast.Pass())]


def _function(node: ast.FunctionDef) -> list[tuple[str, Build]]:
    body_start = 1 if node.body and isinstance(node.body[0], ast.Expr) and isinstance(
        getattr(node.body[0], "value", None), ast.Constant) else 0
    returns: list[ast.expr] = [ast.Constant(None), ast.Constant(0)]
    if node.args.args:
        returns.insert(0, ast.Name(node.args.args[0].arg, ast.Load()))
    out = []
    for value in returns:
        def build(n, value=value):
            body = [*n.body[:body_start], ast.Return(copy.deepcopy(value)), *n.body[body_start:]]
            return _with(n, body=body)
        out.append((f"early return {_text(value)}", build))

    def no_grad(n):
        wrapped = ast.With([ast.withitem(ast.parse("__import__('torch').no_grad()", mode="eval").body)],
                           n.body[body_start:])
        return _with(n, body=[*n.body[:body_start], wrapped])
    out.append(("no_grad added", no_grad))
    return out


# code that names one of these is about autograd (``optim.``, not ``optim``: a parameter named
# ``optimizer`` in integer arithmetic is not); a docstring that names one of GRADIENT_PROSE too
GRADIENT_WORDS = ("grad", "backward", "detach", "optim.", ".step(", "inference_mode")
GRADIENT_PROSE = ("autograd", "backward")
GRADIENT_KINDS = ("no_grad added", "no_grad dropped", "detach added", "detach dropped")


def sites(node: ast.AST, in_body: bool = True, about_gradients: bool = True) -> list[tuple[str, Build]]:
    """Every mutation of ``node``: (label, build). ``about_gradients=False`` leaves out the
    no_grad / detach mutants (equivalent by construction in code that never touches autograd)."""
    found: list[tuple[str, Build]] = []
    if isinstance(node, ast.Compare):
        found = _compare(node)
    elif isinstance(node, ast.BinOp | ast.AugAssign):
        found = _binop(node)
    elif isinstance(node, ast.Constant):
        found = _constant(node)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        found = _negative(node)
    elif isinstance(node, ast.Call):
        found = _call(node)
    elif isinstance(node, ast.FunctionDef):
        found = _function(node)
    if isinstance(node, ast.Return):
        found = found + _returned(node)
    if isinstance(node, ast.With):
        found = found + _with_block(node)
    if isinstance(node, ast.stmt):
        found = found + _statement(node, in_body)
    if not about_gradients:
        found = [(kind, build) for kind, build in found if kind not in GRADIENT_KINDS]
    labelled = []
    for kind, build in found:
        try:
            new = build(copy.deepcopy(node))
            label = kind if isinstance(node, ast.FunctionDef) else _label(kind, node, new)
        except Exception:  # noqa: BLE001 - an operator that does not apply here
            continue
        labelled.append((label, build))
    return labelled
