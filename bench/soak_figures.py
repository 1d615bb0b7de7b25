"""The soak's RSS figures (issue 23.2: "grows <= 10 MB after its first 5 minutes, stays <= 350 MB").

A minute's sample is one point of a swing of about +-8 MB with the work in flight at that moment
(a search's buffers, an embedding run, a trim just done or not), so the growth between two single
samples is as much where they fall in the swing as a drift. Beside the raw endpoints (kept, and
reported first) come two figures that a single sample cannot move much:

- `growth_median_mb`: the median of the samples in the window just after minute 5 against the
  median of those in the last window; each window is 5 minutes (minutes 5-10 and 55-60 of an
  hour), shorter when the soak is (half of what follows minute 5 each, so they do not overlap);
- `slope_after_minute_5_mb_per_hour`: the least-squares slope of every sample from minute 5 on.

`python -m bench.soak_figures FILE.json` prints them for a soak's JSON written before they existed.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

SETTLE_MINUTE = 5.0  # the target's "after its first 5 minutes"
WINDOW_MINUTES = 5.0
LIMIT_MB = 350.0


def rss_figures(samples: list[dict[str, Any]], key: str = "rss_mb") -> dict[str, Any]:
    """Raw and robust growth after minute 5, the level, and the samples over 350 MB."""
    after = [s for s in samples if float(s["minute"]) >= SETTLE_MINUTE - 0.05]
    if len(after) < 2:
        return {}
    first_minute, end = float(after[0]["minute"]), float(after[-1]["minute"])
    window = min(WINDOW_MINUTES, (end - first_minute) / 2)
    head = [float(s[key]) for s in after if float(s["minute"]) <= first_minute + window + 0.05]
    tail = [float(s[key]) for s in after if float(s["minute"]) >= end - window - 0.05]
    values = [float(s[key]) for s in after]
    minutes = [float(s["minute"]) for s in after]
    slope = float(np.polyfit(minutes, values, 1)[0]) * 60 if len(after) >= 3 else None
    return {
        "growth_after_minute_5_mb": round(values[-1] - values[0], 1),  # raw endpoints
        "window_minutes": round(window, 2),
        "median_first_window_mb": round(statistics.median(head), 1),
        "median_last_window_mb": round(statistics.median(tail), 1),
        "growth_median_mb": round(statistics.median(tail) - statistics.median(head), 1),
        "slope_after_minute_5_mb_per_hour": None if slope is None else round(slope, 1),
        "after_minute_5_min_mb": min(values),
        "after_minute_5_max_mb": max(values),
        "after_minute_5_mean_mb": round(statistics.fmean(values), 1),
        "samples_after_minute_5": len(values),
        "samples_over_350_mb": sum(v > LIMIT_MB for v in values),
    }


def main(argv: list[str]) -> int:
    for name in argv:
        data = json.loads(Path(name).read_text())
        print(name)
        print(json.dumps(rss_figures(data["samples"]), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
