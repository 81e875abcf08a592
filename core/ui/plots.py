"""Inline SVG charts drawn on the server: no JavaScript library, nothing fetched. Every
label goes through `markupsafe.escape`; numbers are formatted here."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22",
           "#7f7f7f", "#d62728", "#2ca02c", "#393b79", "#e7ba52", "#843c39", "#5254a3",
           "#6b6ecf", "#637939", "#ce6dbd")


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _svg(width: int, height: int, body: list[str], title: str) -> Markup:
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
                  f'<title>{escape(title)}</title>{"".join(body)}</svg>')


def line_chart(series: dict[str, Sequence[tuple[float, float]]], *, title: str,
               x_labels: Sequence[tuple[float, str]] = (), width: int = 640,
               height: int = 220) -> Markup:
    """Lines of (x, y) points, one per named series, with a legend."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return _svg(width, 40, ['<text x="4" y="24">no data yet</text>'], title)
    left, right, top, bottom = 48, 150 if len(series) > 1 else 30, 10, 24
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(min(ys), 0.0), max(max(ys), 0.0)
    y1 = y1 if y1 > y0 else y0 + 1

    def x(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * (width - left - right)

    def y(v: float) -> float:
        return top + (y1 - v) / (y1 - y0) * (height - top - bottom)

    body = [f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" '
            'stroke="#999"/>',
            f'<text x="2" y="{top + 8}" font-size="10">{y1:.3g}</text>',
            f'<text x="2" y="{height - bottom}" font-size="10">{y0:.3g}</text>']
    for value, label in x_labels:
        body.append(f'<text x="{x(value):.1f}" y="{height - 6}" font-size="10" '
                    f'text-anchor="middle">{escape(label)}</text>')
    for n, (name, pts) in enumerate(series.items()):
        path = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in pts)
        body.append(f'<polyline fill="none" stroke="{colour(n)}" stroke-width="1.5" '
                    f'points="{path}"><title>{escape(name)}</title></polyline>')
        if len(series) > 1:
            ly = top + 12 * n + 8
            body.append(f'<rect x="{width - right + 8}" y="{ly - 8}" width="10" height="8" '
                        f'fill="{colour(n)}"/><text x="{width - right + 22}" y="{ly}" '
                        f'font-size="10">{escape(name)}</text>')
    return _svg(width, height, body, title)


def stacked_bars(bars: Sequence[tuple[str, dict[str, float]]], *, title: str,
                 width: int = 720, bar_height: int = 18, legend: bool = True) -> Markup:
    """One horizontal bar per label, its named parts stacked: positive parts to the right
    of zero, negative ones to the left; a legend of the part names below."""
    per_row = 5
    if not bars:
        return _svg(width, 40, ['<text x="4" y="24">nothing to show</text>'], title)
    names = list(dict.fromkeys(k for _, parts in bars for k in parts))
    left, right = 10 + 6 * max(len(label) for label, _ in bars), 10
    pos = max(sum(v for v in parts.values() if v > 0) for _, parts in bars) or 1.0
    neg = max(-sum(v for v in parts.values() if v < 0) for _, parts in bars) or 0.0
    scale = (width - left - right) / (pos + neg)
    zero = left + neg * scale
    legend_rows = -(-len(names) // per_row) if legend else 0
    height = len(bars) * (bar_height + 4) + 16 + 14 * legend_rows
    body = []
    for row, (label, parts) in enumerate(bars):
        top = row * (bar_height + 4) + 4
        body.append(f'<text x="2" y="{top + bar_height - 5}" font-size="11">'
                    f'{escape(label)}</text>')
        ahead, behind = zero, zero
        for name, value in parts.items():
            w = abs(value) * scale
            if w < 0.05:
                continue
            if value > 0:
                at, ahead = ahead, ahead + w
            else:
                behind -= w
                at = behind
            body.append(f'<rect x="{at:.1f}" y="{top}" width="{w:.1f}" height="{bar_height}" '
                        f'fill="{colour(names.index(name))}"><title>{escape(name)} '
                        f'{value:+.3f}</title></rect>')
    base = len(bars) * (bar_height + 4) + 4
    body.append(f'<line x1="{zero:.1f}" y1="0" x2="{zero:.1f}" y2="{base}" stroke="#333"/>')
    for n, name in enumerate(names if legend else ()):
        lx, ly = 10 + (n % per_row) * 140, base + 14 + 14 * (n // per_row)
        body.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" '
                    f'fill="{colour(n)}"/><text x="{lx + 14}" y="{ly}" font-size="10">'
                    f'{escape(name)}</text>')
    return _svg(width, height, body, title)


def bars(values: dict[str, float], *, title: str, width: int = 640) -> Markup:
    """Signed horizontal bars, one per named value (the reranker's weights)."""
    return stacked_bars([(name, {name: value}) for name, value in values.items()],
                        title=title, width=width, legend=False)
