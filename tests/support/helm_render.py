"""A small renderer for the subset of Helm's Go templates that helm/profilerhub uses.

There is no ``helm`` binary here, so the chart tests render the chart with this. It is NOT
Helm: it knows only what the chart needs, and refuses anything else loudly (so the chart stays
inside the subset this renderer checks, and a template it cannot read fails the test rather than
rendering wrongly).  The subset:

* actions ``{{ pipeline }}``, with ``{{-``/``-}}`` whitespace trimming and ``{{/* comments */}}``;
* ``if`` / ``else`` / ``end``, ``define`` / ``end`` (no ``with``, ``range``, ``else if``, ``template``);
* variables ``$name := pipeline`` and ``$`` (the root);
* fields ``.Values.a.b`` (a path missing from the values is an error, not an empty string),
  ``.Release.*``, ``.Chart.*``; pipelines ``a | f b`` (the piped value is the last argument);
  parenthesised sub-pipelines;
* functions: include, printf, default, required, quote, trunc, trimSuffix, b64enc, sha256sum,
  toYaml, nindent, indent, not, and, or, eq, ne, get, dict, lookup (answers ``{}``, as
  ``helm template`` does without a cluster), randAlphaNum, genPrivateKey ("ed25519").
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+)|(?P<assign>:=)|(?P<lp>\()|(?P<rp>\))|(?P<pipe>\|)'
    r"|(?P<var>\$\w*(?:\.\w+)*)|(?P<field>\.(?:[\w]+(?:\.[\w]+)*)?)|(?P<ident>[A-Za-z_]\w*))"
)


class TemplateError(Exception):
    """The template is outside the subset, or fails (a missing value, ``required``)."""


class MissingValue(TemplateError):
    pass


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and not (isinstance(value, (dict, list)) and not value)


def to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        raise TemplateError(f"cannot print a {type(value).__name__} without toYaml: {value!r}")
    return str(value)


def _to_yaml(value: Any) -> str:
    if value in ({}, []):
        return json.dumps(value)
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True).rstrip("\n")


def _indent(n: int, text: Any) -> str:
    return "\n".join((" " * n + line) if line else line for line in to_text(text).split("\n"))


def _printf(fmt: str, *args: Any) -> str:
    return re.sub(r"%[svd]", "%s", fmt) % tuple(to_text(a) for a in args)


def _required(message: str, value: Any) -> Any:
    if not truthy(value):
        raise TemplateError(f"required: {message}")
    return value


def _gen_private_key(kind: str) -> str:
    if kind != "ed25519":
        raise TemplateError(f"genPrivateKey {kind!r}: only ed25519 here")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return (
        Ed25519PrivateKey.generate()
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "printf": _printf,
    "default": lambda fallback, value=None: value if truthy(value) else fallback,
    "required": _required,
    "quote": lambda value: json.dumps(to_text(value)),
    "trunc": lambda n, s: to_text(s)[:n],
    "trimSuffix": lambda suffix, s: to_text(s).removesuffix(suffix),
    "b64enc": lambda s: base64.b64encode(to_text(s).encode()).decode(),
    "sha256sum": lambda s: hashlib.sha256(to_text(s).encode()).hexdigest(),
    "toYaml": _to_yaml,
    "nindent": lambda n, s: "\n" + _indent(n, s),
    "indent": _indent,
    "not": lambda v: not truthy(v),
    "and": lambda *vs: all(truthy(v) for v in vs),
    "or": lambda *vs: any(truthy(v) for v in vs),
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "get": lambda d, key: d.get(key, "") if isinstance(d, dict) else "",
    "dict": lambda *kv: dict(zip(kv[::2], kv[1::2], strict=True)),
    "lookup": lambda *args: {},
    "randAlphaNum": lambda n: "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n)),
    "genPrivateKey": _gen_private_key,
}


# -- parsing ---------------------------------------------------------------------------------


def _pieces(source: str) -> list[tuple[str, str]]:
    """``("text", s)`` and ``("action", body)`` in order, with Go's whitespace trimming applied."""
    out: list[tuple[str, str]] = []
    pos, trim_next = 0, False
    for match in _ACTION.finditer(source):
        text = source[pos : match.start()]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if match.group(1):
            text = text.rstrip(" \t\r\n")
        out.append(("text", text))
        body = match.group(2).strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            out.append(("action", body))
        pos, trim_next = match.end(), bool(match.group(3))
    tail = source[pos:]
    out.append(("text", tail.lstrip(" \t\r\n") if trim_next else tail))
    return out


def parse(source: str) -> tuple[list[Any], dict[str, list[Any]]]:
    """The node tree of ``source`` and the named templates it defines."""
    defines: dict[str, list[Any]] = {}
    root: list[Any] = []
    stack: list[tuple[str, Any, list[Any]]] = [("root", None, root)]
    for kind, body in _pieces(source):
        current = stack[-1][2]
        if kind == "text":
            if body:
                current.append(("text", body))
            continue
        word = body.split(None, 1)[0] if body else ""
        rest = body[len(word) :].strip()
        if word == "if":
            node: list[Any] = ["if", rest, [], []]
            current.append(node)
            stack.append(("if", node, node[2]))
        elif word == "else":
            if rest or stack[-1][0] != "if":
                raise TemplateError(f"unsupported: {{{{ {body} }}}}")
            stack[-1] = ("else", stack[-1][1], stack[-1][1][3])
        elif word == "define":
            name = json.loads(rest)
            defines[name] = []
            stack.append(("define", name, defines[name]))
        elif word == "end":
            if len(stack) == 1:
                raise TemplateError("unbalanced {{ end }}")
            stack.pop()
        elif word in ("with", "range", "template", "block", "break", "continue"):
            raise TemplateError(f"outside the chart's template subset: {{{{ {body} }}}}")
        else:
            current.append(("expr", body))
    if len(stack) != 1:
        raise TemplateError(f"unclosed {{{{ {stack[-1][0]} }}}}")
    return root, defines


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    expr = expr.rstrip()
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if not match or match.end() == pos:
            raise TemplateError(f"cannot read {expr!r} at {pos}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


# -- evaluation ------------------------------------------------------------------------------


class Renderer:
    def __init__(self, defines: dict[str, list[Any]], root: dict[str, Any]) -> None:
        self.defines = defines
        self.root = root

    def render(self, nodes: list[Any], dot: Any, variables: dict[str, Any] | None = None) -> str:
        scope = {} if variables is None else variables
        out = []
        for node in nodes:
            if node[0] == "text":
                out.append(node[1])
            elif node[0] == "expr":
                out.append(to_text(self.statement(node[1], dot, scope)))
            else:  # if
                _, cond, then, otherwise = node
                chosen = then if truthy(self.pipeline(_tokens(cond), dot, scope)) else otherwise
                out.append(self.render(chosen, dot, scope))
        return "".join(out)

    def statement(self, expr: str, dot: Any, scope: dict[str, Any]) -> Any:
        tokens = _tokens(expr)
        if len(tokens) > 2 and tokens[0][0] == "var" and tokens[1][0] == "assign":
            scope[tokens[0][1]] = self.pipeline(tokens[2:], dot, scope)
            return ""
        return self.pipeline(tokens, dot, scope)

    def pipeline(self, tokens: list[tuple[str, str]], dot: Any, scope: dict[str, Any]) -> Any:
        commands: list[list[tuple[str, str]]] = [[]]
        depth = 0
        for token in tokens:
            depth += token[0] == "lp"
            depth -= token[0] == "rp"
            if token[0] == "pipe" and depth == 0:
                commands.append([])
            else:
                commands[-1].append(token)
        value: Any = _NOTHING
        for command in commands:
            value = self.command(command, dot, scope, value)
        return value

    def command(self, tokens: list[tuple[str, str]], dot: Any, scope: dict[str, Any], piped: Any) -> Any:
        operands = self.operands(tokens, dot, scope)
        if not operands:
            raise TemplateError("empty command")
        head, args = operands[0], operands[1:]
        if piped is not _NOTHING:
            args = [*args, piped]
        if isinstance(head, _Func):
            return head(self, dot, args)
        if args:
            raise TemplateError(f"{head!r} is not a function")
        return head

    def operands(self, tokens: list[tuple[str, str]], dot: Any, scope: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        i = 0
        while i < len(tokens):
            kind, text = tokens[i]
            if kind == "lp":
                depth, j = 1, i + 1
                while depth:
                    if j >= len(tokens):
                        raise TemplateError("unbalanced (")
                    depth += tokens[j][0] == "lp"
                    depth -= tokens[j][0] == "rp"
                    j += 1
                out.append(self.pipeline(tokens[i + 1 : j - 1], dot, scope))
                i = j
                continue
            if kind == "str":
                out.append(json.loads(text))
            elif kind == "num":
                out.append(int(text))
            elif kind == "field":
                out.append(self.field(dot, text))
            elif kind == "var":
                name, _, path = text.partition(".")
                base = self.root if name == "$" else scope[name]
                out.append(self.field(base, "." + path) if path else base)
            elif kind == "ident":
                if text in ("true", "false"):
                    out.append(text == "true")
                elif text == "include" or text in FUNCTIONS:
                    func = _Func(text)
                    # a function that is not first is called with no arguments (``default dict``)
                    out.append(func if not out else func(self, dot, []))
                else:
                    raise TemplateError(f"unknown function {text!r}")
            else:
                raise TemplateError(f"unexpected {text!r}")
            i += 1
        return out

    def field(self, base: Any, path: str) -> Any:
        if path == ".":
            return base
        value = base
        walked = []
        for part in path.strip(".").split("."):
            walked.append(part)
            if not isinstance(value, dict) or part not in value:
                raise MissingValue(f"no value at .{'.'.join(walked)}")
            value = value[part]
        return value

    def include(self, name: str, dot: Any) -> str:
        if name not in self.defines:
            raise TemplateError(f"no template named {name!r}")
        return self.render(self.defines[name], dot, {})


class _Func:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, renderer: Renderer, dot: Any, args: list[Any]) -> Any:
        if self.name == "include":
            return renderer.include(args[0], args[1])
        return FUNCTIONS[self.name](*args)


_NOTHING = object()


# -- the chart ---------------------------------------------------------------------------------


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def render_chart(
    chart: Path,
    overrides: dict[str, Any] | None = None,
    *,
    release: str = "ph",
    namespace: str = "profilerhub",
) -> dict[str, Any]:
    """``{"objects": [(template path, object dict)], "notes": str}`` for the chart and overrides."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    values = deep_merge(yaml.safe_load((chart / "values.yaml").read_text()), overrides or {})
    root = {
        "Values": values,
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": True},
        "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta["appVersion"]},
    }
    templates = sorted(p for p in (chart / "templates").rglob("*") if p.is_file())
    parsed = {path: parse(path.read_text()) for path in templates}
    defines: dict[str, list[Any]] = {}
    for _, named in parsed.values():
        defines.update(named)
    renderer = Renderer(defines, root)
    objects: list[tuple[str, dict[str, Any]]] = []
    notes = ""
    for path, (nodes, _) in parsed.items():
        name = str(path.relative_to(chart))
        if path.name.startswith("_"):
            continue
        text = renderer.render(nodes, root)
        if path.name == "NOTES.txt":
            notes = text
            continue
        for document in yaml.safe_load_all(text):
            if document is not None:
                objects.append((name, document))
    return {"objects": objects, "notes": notes}


__all__ = ["MissingValue", "Renderer", "TemplateError", "deep_merge", "parse", "render_chart"]
