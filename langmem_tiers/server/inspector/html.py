"""The inspector's HTML: escaping, the page frame and a few small building blocks.

Every stored text (memory contents, values, session messages, ids) is untrusted: it
reaches a page only through :func:`esc` (or :func:`attr` inside an attribute), so a
memory holding ``<script>`` is shown as text. Pages are plain strings put together by the
functions here; no template engine.

Example:
    >>> esc("<script>alert(1)</script>")
    '&lt;script&gt;alert(1)&lt;/script&gt;'
    >>> link("/ui/x?a=1&b=2", "<b>")
    '<a href="/ui/x?a=1&amp;b=2">&lt;b&gt;</a>'
    >>> table(["n"], [["<i>"]])
    '<table><thead><tr><th scope="col">n</th></tr></thead><tbody><tr><td>&lt;i&gt;</td></tr></tbody></table>'
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

__all__ = [
    "CSS",
    "Raw",
    "attr",
    "esc",
    "fmt_time",
    "json_block",
    "link",
    "page",
    "query",
    "table",
    "ui_path",
]

PREFIX = "/ui"
"""Where the inspector's pages are mounted."""


class Raw(str):
    """HTML already escaped or built from escaped parts (not escaped again)."""

    __slots__ = ()


def esc(value: object) -> str:
    """``value`` as text safe inside an element (``Raw`` is passed through)."""
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        return ""
    return html.escape(str(value), quote=True)


def attr(value: object) -> str:
    """``value`` escaped for a double-quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def ui_path(*parts: str) -> str:
    """``/ui/<part>/<part>`` with each part percent-encoded (ids may hold any character)."""
    return "/".join([PREFIX, *(quote(p, safe="") for p in parts)])


def query(path: str, **params: object) -> str:
    """``path`` with the parameters that are not None or empty as a query string."""
    given = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return f"{path}?{urlencode(given)}" if given else path


def link(href: str, text: object, **attrs: str) -> Raw:
    """An ``<a>`` with escaped text (``attrs``: more attributes, escaped)."""
    more = "".join(f' {k.rstrip("_").replace("_", "-")}="{attr(v)}"' for k, v in attrs.items())
    return Raw(f'<a href="{attr(href)}"{more}>{esc(text)}</a>')


def fmt_time(value: datetime | str | None) -> str:
    """An instant as ``YYYY-MM-DD HH:MM:SS`` (UTC as stored); empty for None."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("T", " ")[:19]
    return value.strftime("%Y-%m-%d %H:%M:%S")


def json_block(value: Any) -> Raw:
    """A value as indented JSON in a ``<pre>`` (escaped)."""
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str, sort_keys=True)
    return Raw(f'<pre class="json">{esc(text)}</pre>')


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    caption: str | None = None,
    css: str | None = None,
    row_ids: Sequence[str] | None = None,
) -> Raw:
    """A table: a header row, then the rows (cells escaped unless ``Raw``)."""
    out = [f'<table class="{attr(css)}">' if css else "<table>"]
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>")
    out.extend(f'<th scope="col">{esc(h)}</th>' for h in head)
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        rid = f' id="{attr(row_ids[i])}"' if row_ids is not None else ""
        out.append(f"<tr{rid}>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>")
    out.append("</tbody></table>")
    return Raw("".join(out))


CSS = """
:root { --fg: #1d2430; --muted: #5b6575; --line: #d6dbe3; --bg: #fbfcfd; --accent: #1f5fbf;
  --bar: #2f7fd8; --warn: #a3470b; --ok: #23743a; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.2rem; align-items: baseline; padding: .6rem 1.2rem;
  border-bottom: 1px solid var(--line); background: #fff; flex-wrap: wrap; }
header .brand { font-weight: 700; }
header nav a { margin-right: .9rem; }
main { padding: 1rem 1.2rem 3rem; max-width: 1400px; }
h1 { font-size: 1.35rem; margin: .2rem 0 .8rem; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible,
summary:focus-visible { outline: 3px solid #f2b233; outline-offset: 1px; }
table { border-collapse: collapse; width: 100%; margin: .4rem 0 1rem; background: #fff; }
th, td { border: 1px solid var(--line); padding: .3rem .45rem; text-align: left;
  vertical-align: top; }
th { background: #f0f3f7; font-weight: 600; }
table.memories td:nth-child(4), table.events td:nth-child(2), table.messages td:nth-child(3),
table.versions td:nth-child(2), table.versions td:nth-child(3) { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; color: var(--muted); padding: .2rem 0; }
form.filters { display: flex; gap: .8rem; flex-wrap: wrap; align-items: end; margin: .4rem 0 1rem;
  padding: .6rem; background: #fff; border: 1px solid var(--line); }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
input, select, button { font: inherit; padding: .25rem .4rem; }
button { cursor: pointer; }
.muted { color: var(--muted); }
.status-active { color: var(--ok); }
.status-superseded, .status-decayed, .status-deleted, .status-compressed { color: var(--warn); }
.bars { display: grid; grid-template-columns: 7.5rem 1fr 3.6rem; gap: 2px .4rem;
  align-items: center; min-width: 16rem; }
.bars span.v { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
pre.json { background: #f5f7fa; padding: .5rem; border: 1px solid var(--line); max-height: 28rem;
  overflow: auto; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(24rem, 1fr)); gap: 1rem; }
.card { background: #fff; border: 1px solid var(--line); padding: .6rem .8rem; }
.context .msg { border-left: 3px solid var(--line); padding: .2rem .5rem; margin: .3rem 0; }
.context .msg.system { border-color: #8a6ad1; }
.context .msg.human { border-color: var(--bar); }
.context .msg.ai { border-color: var(--ok); }
.msg .role { font-size: .8rem; color: var(--muted); }
svg { max-width: 100%; height: auto; background: #fff; border: 1px solid var(--line); }
.skip { position: absolute; left: -999px; }
.skip:focus { left: .5rem; top: .5rem; background: #fff; padding: .3rem; z-index: 2; }
"""


def page(title: str, body: str, *, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    """A whole page: the frame (links, title) around ``body`` (already HTML)."""
    trail = " / ".join(str(link(href, text)) for href, text in crumbs)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · langmem-tiers inspector</title>"
        f"<style>{CSS}</style></head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        '<header><span class="brand">langmem-tiers inspector</span>'
        f'<nav aria-label="Breadcrumbs">{link(PREFIX + "/", "Scopes")}'
        f"{' / ' + trail if trail else ''}</nav>"
        f'<span class="muted">read-only</span>{link(PREFIX + "/logout", "Sign out")}</header>'
        f'<main id="main"><h1>{esc(title)}</h1>{body}</main></body></html>'
    )
