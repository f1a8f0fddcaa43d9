"""The product's import graph has no circles: every import counts, at module level or inside a function (an
import moved into a function hides a circle, it does not break it)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("approvals", "agents", "remote", "gateway", "ops", "shop", "reviewhub", "practice", "agui", "runtime")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts or "management" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict) -> set[str]:
    """The product modules this one imports, anywhere in it."""

    def resolve(target: str) -> str:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target

    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {resolve(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            found |= {resolve(f"{base}.{alias.name}") for alias in node.names}
    return found - {"", name}


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while not component or v not in component:
                component.add(stack.pop())
            on.difference_update(component)
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_product_has_no_import_circles():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert circles(graph) == []


# The apps from the bottom up: each may import only those before it (runtime/ and approvals/ know none of their
# clients; reviewhub/ is the wiring on top). An import the other way is an arrow pointing up.
LAYERS = ("runtime", "approvals", "practice", "ops", "remote", "agents", "gateway", "agui", "shop", "reviewhub")


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    rank = {package: i for i, package in enumerate(LAYERS)}
    return sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        for target in targets
        if rank[target.split(".")[0]] > rank[name.split(".")[0]]
    )


def test_the_product_imports_only_downwards():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert upward_arrows(graph) == []


def test_the_check_finds_an_upward_arrow():
    assert upward_arrows({"approvals.tools": {"agents.loop", "approvals.models"}}) == ["approvals.tools -> agents.loop"]


def test_the_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
