"""What a custom network's text says before any of it runs: syntax, and a `build` to call.

The server (and the CLI) parse and compile the user's file here, in their own process: Python's
parser and compiler run no user code, so a SyntaxError or a file without `build` is answered in
milliseconds instead of after starting a checker (seconds, for importing torch). Everything else
(imports, build(), forward passes) is left to the isolated check (isolated.py).

It refuses only what is certain: a file that rebinds names in ways the syntax tree cannot follow
(``from x import *``, ``globals()``, ``exec``, ``global build``) passes on to the real check.
Torch-free, like everything the server imports on start-up.
"""

from __future__ import annotations

import ast

BUILD_CONTRACT = ("the file must define a function build(num_classes, in_channels, image_size) "
                  "that returns a torch.nn.Module")
BUILD_ARGUMENTS = 3  # build(num_classes, in_channels, image_size), called positionally
# Names through which code can bind `build` where the syntax tree does not show it.
_DYNAMIC_NAMES = frozenset({"globals", "exec", "eval", "vars", "setattr", "__import__", "locals"})


def precheck_source(source: str, filename: str = "network.py") -> dict | None:
    """A check's answer for what the text alone shows wrong ({"ok": False, "error", "line"}),
    or None when only building it can tell (then the isolated check runs)."""
    try:
        tree = ast.parse(source, filename)
        # The compiler finds what the parser lets through ('return' outside a function, ...).
        compile(tree, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return _refusal(f"SyntaxError: {exc.msg}", exc.lineno)
    except (ValueError, RecursionError, MemoryError):
        return None  # null bytes, absurd nesting: the isolated check reports them as before
    return _build_problem(tree)


def _refusal(message: str, line: int | None) -> dict:
    return {"ok": False, "error": f"line {line}: {message}" if line else message, "line": line}


def _build_problem(tree: ast.Module) -> dict | None:
    """The refusal when the module certainly binds no usable `build`, else None."""
    if _dynamic(tree):
        return None
    bindings = list(_module_bindings(tree.body))
    if not bindings:
        return _refusal(BUILD_CONTRACT, None)
    [only, *others] = bindings
    # One plain def is what the file runs with; with several bindings (if/else, a rebinding), a
    # decorator, a class (its __init__ decides) or an assignment, only running it tells.
    if not others and isinstance(only, (ast.FunctionDef, ast.AsyncFunctionDef)) and not only.decorator_list:
        return _signature_problem(only)
    return None


def _dynamic(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return True
        if isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            return True
        if isinstance(node, ast.Global) and "build" in node.names:
            return True
    return False


def _module_bindings(body: list[ast.stmt]):
    """Statements that bind the module-level name `build`, in source order; descends into
    if/try/with/for/while blocks (they run at module level) but not into functions or classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "build":
                yield node
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name.split(".")[0]) == "build" for alias in node.names):
                yield node
            continue
        if any(isinstance(target, ast.Name) and target.id == "build" and isinstance(target.ctx, ast.Store)
               for target in _assigned_names(node)):
            yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, None) or []:
                # except and case clauses hold statements; the other fields are statements
                block = isinstance(child, (ast.ExceptHandler, ast.match_case))
                yield from _module_bindings(child.body if block else [child])


def _assigned_names(node: ast.stmt):
    """Names a simple statement stores to (not inside the blocks of a compound one)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            yield from (n for n in ast.walk(target) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield from (n for n in ast.walk(node.target) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                yield from (n for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name))
    elif isinstance(node, ast.Expr):  # a walrus at top level: (build := ...)
        yield from (n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
    # Other statements (del, match captures...) are rare enough to leave to the real check.


def _signature_problem(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict | None:
    """build() is called as build(num_classes, in_channels, image_size): a def that cannot take
    that call is refused with its line."""
    if isinstance(func, ast.AsyncFunctionDef):
        return _refusal("build must be a plain function (def), not async: it is called, "
                        "not awaited", func.lineno)
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    takes = ", ".join(a.arg for a in positional) + (f", *{args.vararg.arg}" if args.vararg else "")
    if (len(positional) < BUILD_ARGUMENTS and args.vararg is None) or required > BUILD_ARGUMENTS:
        return _refusal(f"build() is called as build(num_classes, in_channels, image_size), but it "
                        f"takes ({takes})", func.lineno)
    missing = [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None]
    if missing:
        return _refusal(f"build() is called as build(num_classes, in_channels, image_size): its "
                        f"keyword-only argument {missing[0]!r} needs a default", func.lineno)
    return None
