"""Typed seams (issue 23): every client parameter in scorer/ has a real type, and there is
one way to get a Langfuse client."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from langfuse.api import LangfuseAPI

from scorer.langfuse_client import LangfuseClient, get_client

SCORER = Path(__file__).resolve().parents[1] / "scorer"
CLIENT_NAME = re.compile(r"api|client|langfuse", re.IGNORECASE)
UNTYPED = {"Any", "Any | None", "Optional[Any]", "object"}


def untyped_clients(source: str, name: str = "<src>") -> list[str]:
    """`file:line name` of each parameter or field named like a client and typed `Any`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        named: list[tuple[str, ast.expr | None, int]] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            named = [
                (p.arg, p.annotation, p.lineno) for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]
            ]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            named = [(node.target.id, node.annotation, node.lineno)]
        for arg, annotation, line in named:
            typed_any = annotation is not None and ast.unparse(annotation) in UNTYPED
            if typed_any and CLIENT_NAME.search(arg):
                found.append(f"{name}:{line} {arg}")
    return found


def test_the_check_finds_an_any_typed_client():
    bad = "def f(api: Any = None, *, client: Any): ...\nclass C:\n    langfuse: Any\n"
    assert untyped_clients(bad) == ["<src>:1 api", "<src>:1 client", "<src>:3 langfuse"]
    assert untyped_clients("def f(client: LangfuseClient, body: Any): ...") == []


def test_no_client_parameter_in_scorer_is_typed_any():
    found = [
        hit
        for path in sorted(SCORER.rglob("*.py"))
        for hit in untyped_clients(path.read_text(), str(path.relative_to(SCORER.parent)))
    ]
    assert found == []


def test_wrap_reads_host_and_public_key_from_the_sdk_object():
    api = LangfuseAPI(base_url="https://lf.example/", username="pk-lf-1", password="sk-lf-1")
    client = LangfuseClient.wrap(api)
    assert (client.api, client.host, client.public_key) == (api, "https://lf.example", "pk-lf-1")
    assert client.cache_key == "https://lf.example|pk-lf-1"


def test_get_client_is_the_given_client_or_the_settings_one(monkeypatch):
    given = LangfuseClient.wrap(LangfuseAPI(base_url="https://a.example", username="pk"))
    assert get_client(given) is given
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-env")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-env")
    monkeypatch.setenv("LANGFUSE_BASE_URL", "https://env.example")
    from scorer.settings import get_settings

    get_settings.cache_clear()
    built = get_client(None)
    assert (built.host, built.public_key) == ("https://env.example", "pk-env")
