"""Every SQL statement of convostore_langgraph is in ``_schema.py`` (ARCHITECTURE.md: "SQL lives
in named statements in one module per package"): no other module holds SQL text."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import convostore_langgraph
import pytest

PACKAGE = Path(convostore_langgraph.__file__).parent
SQL_MODULE = PACKAGE / "_schema.py"
MODULES = sorted(p for p in PACKAGE.glob("*.py") if p != SQL_MODULE)
STATEMENT = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE\s+FROM|CREATE|DROP|ALTER)\b")


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes (prose may name a statement)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def sql_literals(path: Path) -> list[str]:
    """The string literals of ``path`` (f-strings included, docstrings not) that hold SQL."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and STATEMENT.search(node.value)
    ]


def test_there_are_modules_to_check() -> None:
    assert {p.name for p in MODULES} >= {"saver.py", "store.py", "_codec.py", "_history.py"}


def test_the_scan_finds_statements() -> None:
    found = sql_literals(SQL_MODULE)
    assert any(s.startswith("SELECT") for s in found)
    assert any("DELETE FROM" in s for s in found) and any("INSERT INTO" in s for s in found)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_other_module_holds_sql(path: Path) -> None:
    assert sql_literals(path) == [], f"{path.name} holds SQL; name the statement in _schema.py"
