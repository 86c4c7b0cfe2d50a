#!/usr/bin/env python3
"""Draws a benchmark table as an SVG bar chart of loopc against its peers.

Reads a markdown table that bench/cpu/run.sh, bench/cpu/polybench.sh or
bench/gpu/run.sh printed (the lines before the table, "Device: ..." and
"Date: ...", become the chart's caption) and draws, for each row, one
horizontal bar per ratio column (a header with " / " in it, such as
"C / loopc", "Polly / loopc" or "loopc / peer"). Every such ratio in those
tables is loopc's speed over the peer's: above 1, loopc is faster. The axis is
logarithmic, with a line at 1. Rows without a number in a ratio column get no
bar for it.

Usage: bench/plot.py TABLE.md OUT.svg [--title TEXT] [--rows REGEX]
  --rows keeps only the rows whose label (kernel, sizes and peer) matches.
Only the Python standard library is used.
"""

import argparse
import html
import math
import re
import sys

COLORS = ["#3366cc", "#dc7633", "#2e9e5e", "#8e44ad"]
ROW_HEIGHT = 18
PLOT_WIDTH = 420
CHARACTER_WIDTH = 6.6  # of the labels' 11px sans-serif, a little over on average
MARGIN = 12


def read_table(path):
    """The caption lines, the header and the rows of the first table."""
    caption, header, rows = [], None, []
    with open(path, encoding="utf-8") as table:
        for line in table:
            line = line.rstrip("\n")
            if not line.startswith("|"):
                if header is None and line.strip() and not rows:
                    caption.append(line.strip())
                elif header is not None:
                    break
                continue
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif not all(re.fullmatch(r":?-+:?", cell) for cell in cells):
                rows.append(cells)
    if header is None:
        sys.exit(f"plot.py: no table in {path}")
    return caption, header, rows


def number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def label_of(header, row):
    named = dict(zip(header, row))
    parts = [named.get("kernel", row[0])]
    if "sizes" in named:
        parts.append(named["sizes"])
    if "peer" in named:
        parts.append("vs " + named["peer"])
    return ", ".join(part for part in parts if part)


def draw(caption, header, rows, title):
    ratio_columns = [i for i, name in enumerate(header) if " / " in name]
    if not ratio_columns:
        sys.exit("plot.py: the table has no ratio column (a header with ' / ')")
    bars = []
    for row in rows:
        values = [number(row[i]) if i < len(row) else None for i in ratio_columns]
        if any(values):
            bars.append((label_of(header, row), values))
    if not bars:
        sys.exit("plot.py: no row has a ratio")
    label_width = max(160, CHARACTER_WIDTH * max(len(label) for label, _ in bars) + 2 * MARGIN)
    everything = [v for _, values in bars for v in values if v]
    low = 2 ** math.floor(math.log2(min(min(everything), 1.0)))
    high = 2 ** math.ceil(math.log2(max(max(everything), 1.0) * 1.05))
    span = math.log2(high) - math.log2(low)

    def x_of(value):
        return label_width + PLOT_WIDTH * (math.log2(value) - math.log2(low)) / span

    per_row = len(ratio_columns)
    row_height = ROW_HEIGHT * per_row + 6
    top = MARGIN + 18 * (1 + len(caption)) + 18 * per_row + 10
    height = top + row_height * len(bars) + 40
    width = max(label_width + PLOT_WIDTH + 2 * MARGIN, CHARACTER_WIDTH * max(map(len, caption)))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{MARGIN}" y="{MARGIN + 12}" font-size="14" font-weight="bold">'
        f"{html.escape(title)}</text>",
    ]
    y = MARGIN + 12
    for line in caption:
        y += 18
        out.append(f'<text x="{MARGIN}" y="{y}" fill="#444">{html.escape(line)}</text>')
    for k, column in enumerate(ratio_columns):
        y += 18
        color = COLORS[k % len(COLORS)]
        out.append(f'<rect x="{MARGIN}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(
            f'<text x="{MARGIN + 14}" y="{y}">{html.escape(header[column])} '
            "(loopc's speed over the peer's: above 1, loopc is faster)</text>"
        )
    # Grid lines at powers of two, the line at 1 darker.
    value = low
    while value <= high * 1.0001:
        x = x_of(value)
        stroke = "#222" if abs(value - 1.0) < 1e-9 else "#ddd"
        out.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" '
            f'y2="{top + row_height * len(bars)}" stroke="{stroke}"/>'
        )
        text = f"{value:g}" if value >= 1 else f"1/{1 / value:g}"
        out.append(
            f'<text x="{x:.1f}" y="{top + row_height * len(bars) + 14}" '
            f'text-anchor="middle" fill="#444">{text}</text>'
        )
        value *= 2
    for n, (label, values) in enumerate(bars):
        row_top = top + n * row_height
        out.append(
            f'<text x="{label_width - 6}" y="{row_top + row_height / 2 + 4:.1f}" '
            f'text-anchor="end">{html.escape(label)}</text>'
        )
        for k, ratio in enumerate(values):
            if not ratio:
                continue
            bar_y = row_top + k * ROW_HEIGHT + 2
            start, end = sorted((x_of(1.0), x_of(ratio)))
            color = COLORS[k % len(COLORS)]
            out.append(
                f'<rect x="{start:.1f}" y="{bar_y}" width="{max(end - start, 1):.1f}" '
                f'height="{ROW_HEIGHT - 4}" fill="{color}"/>'
            )
            anchor, text_x = ("start", end + 3) if ratio >= 1 else ("end", start - 3)
            out.append(
                f'<text x="{text_x:.1f}" y="{bar_y + ROW_HEIGHT - 7}" '
                f'text-anchor="{anchor}" font-size="10">{ratio:g}</text>'
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("table")
    parser.add_argument("out")
    parser.add_argument("--title", default="loopc against its peers")
    parser.add_argument("--rows", help="keep only the rows whose label matches this regex")
    args = parser.parse_args()
    caption, header, rows = read_table(args.table)
    if args.rows:
        rows = [row for row in rows if re.search(args.rows, label_of(header, row))]
    svg = draw(caption, header, rows, args.title)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(svg)


if __name__ == "__main__":
    main()
