"""Inline SVG drawn on the server: score bars, line charts and validity intervals.

No JavaScript and no chart library: each function answers an ``<svg>`` element as text,
with every label escaped, and a ``<title>`` so screen readers and tooltips say what it
shows.

Example:
    >>> svg = score_bars({"semantic": 0.5, "recency": 1.0})
    >>> svg.count('class="bar"'), 'data-component="semantic"' in svg
    (2, True)
    >>> "<svg" in line_chart("t", {"a": [(0.0, 1.0), (1.0, 2.0)]})
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from langmem_tiers.server.inspector.html import Raw, attr, esc

__all__ = ["COLORS", "intervals_chart", "line_chart", "score_bars"]

COLORS = ("#2f7fd8", "#d8742f", "#23743a", "#8a6ad1", "#b8326a", "#5b6575")
"""Series colours, in order (distinct in greyscale too by their dash patterns)."""

_DASHES = ("", "6 3", "2 2", "8 2 2 2", "1 3", "4 4")


def score_bars(scores: Mapping[str, float], *, min_score: float | None = None) -> Raw:
    """One bar per score component (values in [0, 1]), with the value as text.

    Each bar carries ``data-component`` and ``data-value`` (the exact float), so a reader
    (or a test) can compare the drawing with the ranking's numbers. ``min_score`` draws a
    mark on the ``semantic`` bar: the relevance a result needs.
    """
    rows = []
    for name, value in scores.items():
        width = max(0.0, min(1.0, float(value))) * 100
        mark = ""
        if min_score is not None and name == "semantic":
            x = max(0.0, min(1.0, min_score)) * 100
            mark = (
                f'<line x1="{x:.2f}" x2="{x:.2f}" y1="0" y2="10" stroke="#a3470b" '
                f'stroke-width="1.2"><title>min_score {min_score:g}</title></line>'
            )
        rows.append(
            f'<span class="k">{esc(name)}</span>'
            f'<svg class="bar" role="img" aria-label="{attr(name)} {value:.3f}" '
            f'data-component="{attr(name)}" data-value="{float(value)!r}" '
            f'viewBox="0 0 100 10" preserveAspectRatio="none" width="100%" height="12">'
            f"<title>{esc(name)}: {float(value):.4f}</title>"
            f'<rect x="0" y="0" width="100" height="10" fill="#eef2f7"/>'
            f'<rect x="0" y="0" width="{width:.3f}" height="10" fill="#2f7fd8"/>{mark}</svg>'
            f'<span class="v">{float(value):.3f}</span>'
        )
    return Raw(f'<div class="bars">{"".join(rows)}</div>')


def _ticks(low: float, high: float, n: int = 4) -> list[float]:
    if high <= low:
        return [low]
    step = (high - low) / n
    return [low + i * step for i in range(n + 1)]


@dataclass(frozen=True)
class _Plot:
    """Where a line chart's plot area sits, and the data range it maps onto it."""

    left: int
    top: int
    width: int
    height: int
    x0: float
    x1: float
    y1: float

    def sx(self, x: float) -> float:
        return self.left + (x - self.x0) / ((self.x1 - self.x0) or 1.0) * self.width

    def sy(self, y: float) -> float:
        return self.top + self.height - y / self.y1 * self.height


def _axes(plot: _Plot, *, x_format: str, x_label: str, y_label: str, height: int) -> list[str]:
    """The two axes, their ticks and gridlines, and the axis labels."""
    left, top, plot_w, plot_h = plot.left, plot.top, plot.width, plot.height
    out = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="#5b6575"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#5b6575"/>'
    ]
    for y in _ticks(0.0, plot.y1):
        out.append(
            f'<text x="{left - 6}" y="{plot.sy(y) + 4:.1f}" font-size="11" text-anchor="end">'
            f"{y:,.0f}</text>"
            f'<line x1="{left}" x2="{left + plot_w}" y1="{plot.sy(y):.1f}" y2="{plot.sy(y):.1f}" '
            'stroke="#eef2f7"/>'
        )
    for x in _ticks(plot.x0, plot.x1, 3):
        text = (
            datetime.fromtimestamp(x, tz=timezone.utc).strftime("%m-%d %H:%M")
            if x_format == "time"
            else f"{x:,.0f}"
        )
        out.append(
            f'<text x="{plot.sx(x):.1f}" y="{top + plot_h + 15}" font-size="11" '
            f'text-anchor="middle">{esc(text)}</text>'
        )
    if x_label:
        out.append(
            f'<text x="{left + plot_w / 2:.0f}" y="{height - 6}" font-size="11" '
            f'text-anchor="middle">{esc(x_label)}</text>'
        )
    if y_label:
        out.append(
            f'<text x="12" y="{top + plot_h / 2:.0f}" font-size="11" text-anchor="middle" '
            f'transform="rotate(-90 12 {top + plot_h / 2:.0f})">{esc(y_label)}</text>'
        )
    return out


def _series_line(
    plot: _Plot, i: int, name: str, pts: Sequence[tuple[float, float]], *, step: bool
) -> str:
    """Series ``i`` as a polyline, plus its legend entry (a sample stroke and the last value)."""
    color, dash = COLORS[i % len(COLORS)], _DASHES[i % len(_DASHES)]
    coords: list[str] = []
    for j, (x, y) in enumerate(pts):
        if step and j:
            coords.append(f"{plot.sx(x):.1f},{plot.sy(pts[j - 1][1]):.1f}")
        coords.append(f"{plot.sx(x):.1f},{plot.sy(y):.1f}")
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    legend_x = plot.left + plot.width
    ly = plot.top + 8 + i * 18
    last = pts[-1][1] if pts else 0
    return (
        f'<polyline class="series" data-series="{attr(name)}" data-points="{len(pts)}" '
        f'fill="none" stroke="{color}" stroke-width="1.8"{dash_attr} '
        f'points="{" ".join(coords)}"><title>{esc(name)}</title></polyline>'
        f'<line x1="{legend_x + 12}" x2="{legend_x + 34}" y1="{ly}" y2="{ly}" '
        f'stroke="{color}" stroke-width="2"{dash_attr}/>'
        f'<text x="{legend_x + 38}" y="{ly + 4}" font-size="11">{esc(name)} '
        f"({last:,.0f})</text>"
    )


def line_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    x_label: str = "",
    y_label: str = "",
    x_format: str = "number",
    width: int = 720,
    height: int = 260,
    step: bool = False,
) -> Raw:
    """A line chart of named series of ``(x, y)`` points, with axes and a legend.

    ``x_format``: ``number`` or ``time`` (x values are POSIX timestamps, labelled as
    times). ``step`` draws each series as steps (a count that changes at events).
    """
    points = [p for pts in series.values() for p in pts]
    left, right, top, bottom = 56, 150, 26, 38
    out = [
        f'<svg role="img" aria-label="{attr(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" class="chart"><title>{esc(title)}</title>'
        f'<text x="{left}" y="16" font-size="13" font-weight="600">{esc(title)}</text>'
    ]
    if not points:
        out.append(f'<text x="{left}" y="{top + 30}" font-size="12">nothing to plot</text></svg>')
        return Raw("".join(out))
    plot = _Plot(
        left=left,
        top=top,
        width=width - left - right,
        height=height - top - bottom,
        x0=min(p[0] for p in points),
        x1=max(p[0] for p in points),
        y1=max(max(p[1] for p in points), 1.0),
    )
    out += _axes(plot, x_format=x_format, x_label=x_label, y_label=y_label, height=height)
    for i, (name, pts) in enumerate(series.items()):
        out.append(_series_line(plot, i, name, pts, step=step))
    out.append("</svg>")
    return Raw("".join(out))


def intervals_chart(
    title: str,
    intervals: Sequence[tuple[str, datetime, datetime | None]],
    *,
    now: datetime,
    width: int = 720,
) -> Raw:
    """Horizontal bars on a time axis: ``(label, start, end)``, an open end reaching ``now``."""
    row_h, left, right, top = 22, 110, 20, 24
    height = top + row_h * max(1, len(intervals)) + 28
    out = [
        f'<svg role="img" aria-label="{attr(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" class="chart"><title>{esc(title)}</title>'
        f'<text x="4" y="15" font-size="13" font-weight="600">{esc(title)}</text>'
    ]
    if not intervals:
        out.append('<text x="4" y="40" font-size="12">no versions</text></svg>')
        return Raw("".join(out))
    start = min(i[1] for i in intervals).timestamp()
    end = max((i[2] or now).timestamp() for i in intervals)
    span = (end - start) or 1.0
    plot_w = width - left - right

    def sx(t: datetime) -> float:
        return left + (t.timestamp() - start) / span * plot_w

    for n, (label, begin, until) in enumerate(intervals):
        y = top + n * row_h
        x_a, x_b = sx(begin), sx(until or now)
        state = "open" if until is None else "closed"
        out.append(
            f'<text x="4" y="{y + 14}" font-size="11">{esc(label)}</text>'
            f'<rect class="interval" data-state="{state}" x="{x_a:.1f}" y="{y + 3}" '
            f'width="{max(2.0, x_b - x_a):.1f}" height="{row_h - 8}" '
            f'fill="{COLORS[0] if until is None else "#9aa6b8"}">'
            f"<title>{esc(label)}: {begin:%Y-%m-%d %H:%M:%S} → "
            f"{'now' if until is None else f'{until:%Y-%m-%d %H:%M:%S}'}</title></rect>"
        )
    y = top + len(intervals) * row_h + 14
    first = datetime.fromtimestamp(start, tz=now.tzinfo)
    last = datetime.fromtimestamp(end, tz=now.tzinfo)
    out.append(
        f'<text x="{left}" y="{y}" font-size="11">{first:%Y-%m-%d %H:%M:%S}</text>'
        f'<text x="{left + plot_w}" y="{y}" font-size="11" text-anchor="end">'
        f"{last:%Y-%m-%d %H:%M:%S}</text></svg>"
    )
    return Raw("".join(out))
