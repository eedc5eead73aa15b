"""The README's settings table is the code's: every variable the settings module reads is in
it, every row names a variable something reads, and each plain default is the code's."""

from __future__ import annotations

import re

from tests.helpers import ROOT

README = (ROOT / "README.md").read_text()
SETTINGS = "\n".join(p.read_text() for p in sorted((ROOT / "arena" / "settings").glob("*.py")))
READ = re.compile(
    r'env(?:\.(str|int|float|bool|list))?\(\s*"([A-Z][A-Z0-9_]*)"(?:,\s*default=([^)]+))?\)'
)


def table() -> list[tuple[list[str], list[str]]]:
    """(variable names, default values) per row of the Configuration table."""
    start = README.index("| Variable | Default | Meaning |")
    rows = []
    for line in README[start : README.index("\n\n", start)].splitlines()[2:]:
        cells = line.split("|")
        rows.append((re.findall(r"`([A-Z][A-Z0-9_<>*]*)`", cells[1]),
                     re.findall(r"`([^`]*)`", cells[2])))  # fmt: skip
    return rows


def documented(name: str, names: set[str]) -> bool:
    return name in names or any(n.endswith("*") and name.startswith(n[:-1]) for n in names)


def test_every_variable_the_settings_read_is_in_the_readme():
    names = {n for row, _ in table() for n in row}
    read = {m.group(2) for m in READ.finditer(SETTINGS)}
    assert sorted(n for n in read if not documented(n, names)) == []


def test_every_readme_row_names_a_variable_the_code_reads():
    code = "\n".join(p.read_text() for d in ("arena", "accounts", "ranking", "tests")
                     for p in (ROOT / d).rglob("*.py"))  # fmt: skip
    names = {n for row, _ in table() for n in row}
    unread = {n for n in names if "*" not in n and "<" not in n and f'"{n}"' not in code}
    assert unread == set()


def test_plain_defaults_in_the_readme_are_the_codes():
    defaults = {}
    for names, values in table():
        if len(names) == len(values):
            defaults.update(zip(names, values, strict=True))
    wrong = {}
    for m in READ.finditer(SETTINGS):
        kind, name, default = m.groups()
        if not default or name not in defaults or kind not in ("str", "int", "float", "bool"):
            continue
        code, doc = default.strip().strip('"'), defaults[name]
        if kind in ("int", "float"):
            try:
                same = float(code.replace("_", "")) == float(doc.replace("_", ""))
            except ValueError:
                continue  # a default the README words ("unset", "random key")
        else:
            same = code.lower() == doc.lower()
        if not same:
            wrong[name] = (doc, code)
    assert wrong == {}


def section(title: str) -> str:
    """The README's section of that title, up to the next one."""
    return README[README.index(f"\n## {title}\n") :].split("\n## ")[1]


def test_every_management_command_is_in_the_readmes_table():
    listed = set(re.findall(r"`uv run manage\.py (\w+)", section("Management commands")))
    commands = {p.stem for d in ("arena", "accounts", "ranking")
                for p in (ROOT / d / "management" / "commands").glob("*.py")
                if p.stem != "__init__"}  # fmt: skip
    assert commands - listed == set()


def test_the_readmes_layout_points_to_the_architecture_page():
    assert "(docs/architecture.md)" in section("Project layout")
    assert (ROOT / "docs" / "architecture.md").exists()
