"""Source scan of a candidate file, run by the judge before any candidate code executes.

The scan walks the file's syntax tree (comments and docstrings are ignored, so prose may mention anything) and
rejects, with the line and the reason, a file that:
- ``judge-internals``: references the judge's internals: imports ``ssmkit.harness`` (the worker, its pipes,
  transport), reaches into ``sys.modules``, or does file-descriptor-level I/O (os.read/os.write/os.fdopen/dup...);
- ``introspection``: introspects frames or the process: ``sys._getframe``, ``inspect``, ``gc.get_objects`` /
  ``get_referrers``, frame attributes (``f_back``, ``f_locals``...), tracing hooks, ``ctypes``, ``/proc``;
- ``clock``: reads timers or clocks (``time``, ``timeit``, ``datetime``, ``signal``, ``resource``,
  ``torch.cuda.Event`` / ``elapsed_time``, ``perf_counter``, ``triton.testing.do_bench``...), which a candidate
  could use to special-case timed calls;
- ``baseline``: delegates to a baseline the judge times against: imports ``ssmkit.granite.reference`` /
  ``ReferenceMambaLayer`` or ``ssmkit.mamba3.reference`` / its reference functions. A class *defined* in the file
  under such a name (an exported single file inlines ReferenceMambaLayer's code) is not a delegation;
- ``dynamic-code``: executes or loads code the scan cannot see, controls processes or starts background threads
  (which could finish a call's work after it returned): ``exec``, ``eval``, ``compile``, ``__import__``,
  ``importlib``, ``builtins``, ``pickle``, ``marshal``, ``subprocess``, ``multiprocessing``, ``socket``,
  ``threading``, ``concurrent``, ``asyncio``, ``os.system``/``fork``/``kill``..., ``__subclasses__``;
- ``relative-import``: uses a relative import (a candidate is one file).
The scan is a filter in front of the real defences (a separate unprivileged worker process; the judge owns inputs,
clocks and comparisons), not a proof: it keeps the obvious routes to the judge's state closed.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

RULES = {
    "judge-internals": "references the judge's internals",
    "introspection": "uses frame or process introspection",
    "clock": "uses timers or clocks",
    "baseline": "delegates to the baseline the judge times against",
    "dynamic-code": "executes hidden code or controls processes",
    "relative-import": "uses a relative import (a candidate is a single file)",
    "syntax": "cannot be parsed",
}

# Modules (and their submodules) a candidate may not import or reach by attribute.
_MODULES = {
    "ssmkit.harness": "judge-internals",
    "inspect": "introspection", "ctypes": "introspection", "tracemalloc": "introspection", "pdb": "introspection",
    "bdb": "introspection", "faulthandler": "introspection", "sys.monitoring": "introspection",
    "time": "clock", "timeit": "clock", "datetime": "clock", "signal": "clock", "sched": "clock",
    "resource": "clock", "torch.utils.benchmark": "clock", "triton.testing": "clock",
    "importlib": "dynamic-code", "builtins": "dynamic-code", "pickle": "dynamic-code", "marshal": "dynamic-code",
    "subprocess": "dynamic-code", "multiprocessing": "dynamic-code", "socket": "dynamic-code", "pty": "dynamic-code",
    "runpy": "dynamic-code", "code": "dynamic-code", "posix": "dynamic-code", "torch.multiprocessing": "dynamic-code",
    # background threads could finish a call's work after it returned, outside the timed region
    "threading": "dynamic-code", "_thread": "dynamic-code", "concurrent": "dynamic-code", "asyncio": "dynamic-code",
}
_BASELINE_MODULES = {"ssmkit.granite.reference", "ssmkit.mamba3.reference"}
_BASELINE_NAMES = {"ReferenceMambaLayer", "mamba3_siso_reference",
                   "mamba3_siso_varlen_joint_states_full_vjp_reference"}
# Attribute or imported names that are suspicious whatever object they hang off.
_ATTRIBUTES = {
    "_getframe": "introspection", "_current_frames": "introspection", "f_back": "introspection",
    "f_locals": "introspection", "f_globals": "introspection", "f_code": "introspection",
    "tb_frame": "introspection", "gi_frame": "introspection", "cr_frame": "introspection",
    "get_objects": "introspection", "get_referrers": "introspection", "get_referents": "introspection",
    "settrace": "introspection", "setprofile": "introspection", "extract_stack": "introspection",
    "walk_stack": "introspection", "format_stack": "introspection", "print_stack": "introspection",
    "perf_counter": "clock", "perf_counter_ns": "clock", "monotonic": "clock", "monotonic_ns": "clock",
    "process_time": "clock", "thread_time": "clock", "elapsed_time": "clock", "do_bench": "clock",
    "getrusage": "clock", "setitimer": "clock", "alarm": "clock",
    "__subclasses__": "dynamic-code", "__builtins__": "dynamic-code",
}
# Names under module ``os`` (via ``os.x`` or ``from os import x``).
_OS_NAMES = {
    **{n: "judge-internals" for n in ("read", "write", "fdopen", "dup", "dup2", "pipe", "close", "closerange",
                                       "pread", "pwrite", "sendfile", "set_inheritable", "readv", "writev")},
    **{n: "dynamic-code" for n in ("system", "popen", "fork", "forkpty", "kill", "killpg", "setsid", "execv",
                                    "execve", "execl", "execvp", "spawnv", "spawnl", "posix_spawn", "_exit")},
    "times": "clock",
}
_DOTTED = {"sys.modules": "judge-internals", "torch.cuda.Event": "clock", "torch.cuda.event": "clock"}
_BUILTINS = {"exec": "dynamic-code", "eval": "dynamic-code", "compile": "dynamic-code",
             "__import__": "dynamic-code"}
_STRINGS = {"/proc": "introspection", "ssmkit.harness": "judge-internals", "ssmkit/harness": "judge-internals",
            "_getframe": "introspection", "ssmkit.granite.reference": "baseline",
            "ssmkit.mamba3.reference": "baseline"}


@dataclass(frozen=True)
class Violation:
    """One finding: ``rule`` (a key of RULES), the source ``line`` and what was found."""

    rule: str
    line: int
    detail: str

    def __str__(self) -> str:
        return f"line {self.line}: {RULES[self.rule]} ({self.detail})"


def _module_rule(name: str, allow_reference: bool) -> str | None:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in _MODULES:
            return _MODULES[prefix]
        if prefix in _BASELINE_MODULES and not allow_reference:
            return "baseline"
    return None


def _docstring_ids(tree: ast.AST) -> set[int]:
    """Bare string statements (docstrings, also those of modules inlined into an exported file): prose only."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


class _Scanner(ast.NodeVisitor):
    def __init__(self, allow_reference: bool):
        self.allow_reference = allow_reference
        self.aliases: dict[str, str] = {}
        self.found: list[Violation] = []
        self.docstrings: set[int] = set()

    def flag(self, rule: str | None, node: ast.AST, detail: str) -> None:
        if rule is not None:
            self.found.append(Violation(rule, getattr(node, "lineno", 0), detail))

    def check_name(self, name: str, node: ast.AST, module: str | None) -> None:
        """An imported or accessed name ``name`` (of ``module`` when known)."""
        self.flag(_ATTRIBUTES.get(name), node, name)
        if name in _BASELINE_NAMES and not self.allow_reference:
            self.flag("baseline", node, name)
        if module == "os":
            self.flag(_OS_NAMES.get(name), node, f"os.{name}")

    def check_dotted(self, dotted: str, node: ast.AST) -> None:
        self.flag(_module_rule(dotted, self.allow_reference), node, dotted)
        for name, rule in _DOTTED.items():
            if dotted == name or dotted.startswith(name + "."):
                self.flag(rule, node, dotted)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_dotted(alias.name, node)
            local = alias.asname or alias.name.split(".")[0]
            self.aliases[local] = alias.name if alias.asname else local
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag("relative-import", node, "." * node.level + (node.module or ""))
            return
        module = node.module or ""
        self.check_dotted(module, node)
        for alias in node.names:
            self.check_dotted(f"{module}.{alias.name}", node)
            self.check_name(alias.name, node, module)
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain, base = [node.attr], node.value
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name):
            root = self.aliases.get(base.id, base.id)
            dotted = ".".join([root, *reversed(chain)])
            self.check_dotted(dotted, node)
            owner = dotted.rsplit(".", 1)[0]
            self.check_name(node.attr, node, owner)
        else:
            self.check_name(node.attr, node, None)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.flag(_BUILTINS.get(node.id), node, node.id)
        if node.id == "__builtins__":
            self.flag("dynamic-code", node, node.id)

    def visit_Constant(self, node: ast.Constant) -> None:
        if id(node) in self.docstrings:
            return
        value = node.value
        text = value.decode("latin-1") if isinstance(value, bytes) else value if isinstance(value, str) else None
        if text is not None:
            for needle, rule in _STRINGS.items():
                if needle in text and not (rule == "baseline" and self.allow_reference):
                    self.flag(rule, node, f"string containing {needle!r}")


def scan_source(source: str, filename: str = "<candidate>", allow_reference: bool = False) -> list[Violation]:
    """All violations in ``source`` (empty list: accepted), in line order.

    ``allow_reference`` lifts the ``baseline`` rule; only the judge's own tests use it (a candidate that is the
    reference itself), never the command line.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError) as err:
        return [Violation("syntax", getattr(err, "lineno", 0) or 0, str(err))]
    scanner = _Scanner(allow_reference)
    scanner.docstrings = _docstring_ids(tree)
    scanner.visit(tree)
    details: dict[tuple[int, str], list[str]] = {}
    for v in scanner.found:  # one violation per line and rule, naming everything found there
        found = details.setdefault((v.line, v.rule), [])
        if v.detail not in found:
            found.append(v.detail)
    return [Violation(rule, line, ", ".join(found)) for (line, rule), found in sorted(details.items())]


def scan_file(path: str | Path, allow_reference: bool = False) -> list[Violation]:
    """``scan_source`` of a file read as UTF-8 (an undecodable file is a ``syntax`` violation)."""
    try:
        source = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        return [Violation("syntax", 0, f"not UTF-8: {err}")]
    return scan_source(source, str(path), allow_reference)
