"""An SVG line chart of a soak run's RSS (and its anonymous part) per minute, standard library only.

python -m bench.soak_plot bench/results/<time>-soak.json docs/soak-rss.svg [OTHER.json [LABEL]]

OTHER.json: a second soak's VmRSS as a dashed line, named LABEL.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

W, H, PAD = 720, 360, 56


def svg(
    samples: list[dict[str, Any]],
    title: str,
    limit: float | None = 350.0,
    other: list[dict[str, Any]] | None = None,
    other_label: str = "VmRSS, main (same soak, same index)",
) -> str:
    xs = [float(s["minute"]) for s in samples]
    series = [("VmRSS", "rss_mb", "#1f5fbf"), ("RssAnon", "RssAnon", "#bf5f1f")]
    values = [float(s[k]) for _, k, _ in series for s in samples if s.get(k) is not None]
    values += [float(s["rss_mb"]) for s in other or []]
    top = max([*values, limit or 0.0]) * 1.08
    x_max = max(xs) if xs and max(xs) > 0 else 1.0

    def px(x: float) -> float:
        return PAD + (W - 2 * PAD) * x / x_max

    def py(y: float) -> float:
        return H - PAD - (H - 2 * PAD) * y / top

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="black"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="black"/>',
        f'<text x="{W / 2}" y="{H - 16}" text-anchor="middle">minutes</text>',
        f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" '
        'text-anchor="middle">MB</text>',
    ]
    step = 50 if top > 200 else 25
    for mb in range(0, int(top) + 1, step):
        out.append(
            f'<line x1="{PAD}" y1="{py(mb):.1f}" x2="{W - PAD}" y2="{py(mb):.1f}" '
            'stroke="#ddd"/>'
            f'<text x="{PAD - 6}" y="{py(mb) + 4:.1f}" text-anchor="end">{mb}</text>'
        )
    tick = 5 if x_max <= 60 else 10
    for m in range(0, int(x_max) + 1, tick):
        out.append(f'<text x="{px(m):.1f}" y="{H - PAD + 16}" text-anchor="middle">{m}</text>')
    if limit:
        out.append(
            f'<line x1="{PAD}" y1="{py(limit):.1f}" x2="{W - PAD}" y2="{py(limit):.1f}" '
            'stroke="#c00" stroke-dasharray="6 4"/>'
            f'<text x="{W - PAD}" y="{py(limit) - 4:.1f}" text-anchor="end" fill="#c00">'
            f"target {limit:.0f} MB</text>"
        )
    for i, (name, key, colour) in enumerate(series):
        pts = [(px(x), py(float(s[key]))) for x, s in zip(xs, samples, strict=True) if key in s]
        if not pts:
            continue
        out.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            + '"/>'
        )
        out.append(f'<text x="{PAD + 10}" y="{PAD + 16 * i}" fill="{colour}">{name}</text>')
    if other:
        pts = [(px(float(s["minute"])), py(float(s["rss_mb"]))) for s in other]
        out.append(
            '<polyline fill="none" stroke="#555" stroke-width="2" stroke-dasharray="4 3" '
            'points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>'
        )
        out.append(
            f'<text x="{PAD + 10}" y="{PAD + 16 * len(series)}" fill="#555">{other_label}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    src, dst = Path(argv[0]), Path(argv[1])
    data = json.loads(src.read_text())
    other = json.loads(Path(argv[2]).read_text())["samples"] if len(argv) > 2 else None
    title = f"memoryd soak: {data['chunks']:,} chunks, model loaded, {data['minutes']:.0f} min"
    label = argv[3] if len(argv) > 3 else "VmRSS, main (same soak, same index)"
    dst.write_text(svg(data["samples"], title, other=other, other_label=label))
    print(f"written to {dst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
