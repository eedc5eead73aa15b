"""The shape of the house: imports run one way, accounts is a leaf, modules stay readable.

Every import counts, also those inside functions: a cycle hidden in a function is still a cycle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("arena", "accounts", "ranking")
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an imported name lives in, or None for the outside world."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _model_modules() -> dict[str, str]:
    """Each model class name -> the models module that defines it."""
    found = {}
    for module, path in MODULES.items():
        if module.rpartition(".")[2] == "models":
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    found[node.name] = module
    return found


MODEL_MODULES = _model_modules()
RELATIONS = {"ForeignKey", "OneToOneField", "ManyToManyField"}


def _related_model(node: ast.Call) -> str | None:
    """The model a relation field names by string ("GoldItem", "arena.GoldItem"), if any."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name not in RELATIONS:
        return None
    target = (
        node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "to"), None)
    )
    if isinstance(target, ast.Constant) and isinstance(target.value, str):
        return target.value.rpartition(".")[2]
    return None


def _imports(module: str, path: Path) -> set[str]:
    """What the module imports, also inside functions; a relation to a model named by string
    counts as an import of the module defining that model."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            there = MODEL_MODULES.get(_related_model(node) or "")
            if there is not None and there != module:
                out.add(there)
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            # "from arena.battles import gold" imports the module arena.battles.gold.
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            resolved = _resolve(target)
            if resolved is not None and resolved != module:
                out.add(resolved)
    return out


class _Graph(Mapping[str, set[str]]):
    """Module -> the modules it imports, worked out on first use: every xdist worker imports
    this file to collect its tests, and only the one that runs them need parse the project."""

    @cached_property
    def _edges(self) -> dict[str, set[str]]:
        return {module: _imports(module, path) for module, path in MODULES.items()}

    def __getitem__(self, module: str) -> set[str]:
        return self._edges[module]

    def __iter__(self) -> Iterator[str]:
        return iter(self._edges)

    def __len__(self) -> int:
        return len(self._edges)


GRAPH = _Graph()


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_project_modules():
    assert _cycles(GRAPH) == []


def test_a_relation_named_by_string_counts_as_an_import():
    tree = ast.parse('models.ForeignKey("arena.Vote", on_delete=models.PROTECT)')
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert MODEL_MODULES[_related_model(call)] == "arena.records.models"


def test_the_cycle_check_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# A room's edges (views, consumers, tasks, admin, commands, wiring) sit above its services and
# selectors, which sit above its models; between rooms, imports must then run one way.
ROOMS = (
    "backends",
    "battles",
    "records",
    "catalog",
    "compare",
    "core",
    "evals",
    "generation",
    "integrity",
    "judges",
    "tagging",
    "datasets",
    "images",
    "admin",
    "devtools",
)
EDGE_PARTS = {
    "views",
    "consumers",
    "tasks",
    "urls",
    "routing",
    "asgi",
    "celery",
    "admin",
    "commands",
}


def _layer(module: str) -> str:
    parts = module.split(".")
    room = parts[0]
    if room == "arena" and len(parts) > 1 and parts[1] in (*ROOMS, "management"):
        room = f"arena.{parts[1]}"
    if parts[-1] == "models":
        return f"{room}:models"
    return f"{room}:edge" if EDGE_PARTS & set(parts[1:]) else f"{room}:code"


def _room_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        here = _layer(module)
        graph.setdefault(here, set())
        for target in targets:
            there = _layer(target)
            if here.split(":")[0] != there.split(":")[0]:
                graph[here].add(there)
                graph.setdefault(there, set())
    return graph


def test_rooms_import_one_way():
    """docs/architecture.md draws this graph: battles may use generation and integrity,
    integrity may read the records, but no two rooms' code may import each other."""
    assert _cycles(_room_graph()) == []


def test_accounts_imports_neither_arena_nor_ranking():
    leaks = {
        (module, target)
        for module, targets in GRAPH.items()
        if module.split(".")[0] == "accounts"
        for target in targets
        if target.split(".")[0] in ("arena", "ranking")
    }
    assert leaks == set()


def test_ranking_math_is_pure():
    """The math modules know neither Django nor the rest of the project."""
    pure = [
        "bradley_terry",
        "intervals",
        "style",
        "sampling",
        "compute",
        "battle_log",
        "log_reader",
        "log_rows",
        "plot",
        "blas",
        "numbers",
        "judged",
        "calibration",
        "pairwise",
        "progress",
    ]
    for name in pure:
        module = f"ranking.{name}"
        tree = ast.parse(MODULES[module].read_text())
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        outside = {i for i in imported if i.split(".")[0] in ("django", "arena", "accounts")}
        project = {t for t in GRAPH[module] if not t.startswith("ranking.")}
        assert (outside, project) == (set(), set()), module


def test_no_module_is_longer_than_450_lines():
    paths = [*MODULES.values(), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
    long = {
        str(p.relative_to(ROOT)): n
        for p in paths
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_test_module_imports_another():
    """Shared test code lives in tests/helpers.py (and data in tests/backends/vendors.py)."""
    imports = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                last = name.split(".")[-1]
                if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                    imports.add((str(path.relative_to(ROOT)), name))
    assert imports == set()


DOC = ROOT / "docs" / "architecture.md"
# A dotted name the page uses for code: battles.answers.answer_claim, generation.worker, ...
DOTTED = re.compile(r"\b((?:" + "|".join((*ROOMS, "ranking", "accounts")) + r")(?:\.[a-z_]\w*)+)")


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _doc_problems(text: str) -> list[str]:
    problems = []
    for dotted in sorted(set(DOTTED.findall(text))):
        parts = dotted.split(".")
        prefix = parts[0] if parts[0] in ("ranking", "accounts") else f"arena.{parts[0]}"
        rest = parts[1:]
        module = prefix
        while rest and f"{module}.{rest[0]}" in MODULES:
            module = f"{module}.{rest.pop(0)}"
        if module == prefix and prefix not in MODULES:
            problems.append(dotted)
        elif rest and rest[0] not in _defined(MODULES[module]):
            problems.append(dotted)
    return problems


def _rooms_block_problems(text: str) -> list[str]:
    """Every file the page's room map lists under a room (``answers.py`` under battles/)."""
    block = text.split("## Rooms", 1)[1].split("```")[1]
    problems, folder = [], None
    for line in block.splitlines():
        if re.match(r"^ {0,2}\S", line):  # a room's first line: arena/, core/, ranking/, ...
            heading = re.match(r"^( {0,2})([a-z_]+(?:/[a-z_]+)*)/ ", line)
            top = heading.group(2) if heading else ""
            folder = ROOT / "arena" / top if heading and heading.group(1) else ROOT / top
            if not heading or not folder.is_dir():
                folder = None
        if folder is None:
            continue
        for name in re.findall(r"(?<![/\w])([a-z_]+\.py)\b", line):
            if not (folder / name).exists():
                problems.append(f"{folder.relative_to(ROOT)}/{name}")
    return problems


def test_every_module_and_name_the_architecture_page_gives_exists():
    """docs/architecture.md stays the true picture: a module or function it names by its
    dotted path (battles.answers.answer_claim) is where it says."""
    assert _doc_problems(DOC.read_text()) == []
    assert _rooms_block_problems(DOC.read_text()) == []


def test_the_page_check_sees_a_name_that_moved():
    assert _doc_problems("battles.answers.answer_claim, generation.services.answer_claim") == [
        "generation.services.answer_claim"
    ]


def test_the_page_check_sees_a_file_that_moved():
    moved = DOC.read_text().replace("answers.py (what", "dispatch.py (what")
    assert _rooms_block_problems(moved) == ["arena/battles/dispatch.py"]
