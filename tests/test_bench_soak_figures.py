"""The soak's RSS figures (bench/soak_figures.py): raw endpoints kept beside the robust ones."""

from __future__ import annotations

from bench.soak_figures import rss_figures


def _samples(values: list[float]) -> list[dict[str, float]]:
    return [{"minute": float(i), "rss_mb": v} for i, v in enumerate(values)]


def test_an_hour_with_a_swing_and_no_drift() -> None:
    # minutes 0-60: flat at 300 MB with a swing of +-8 MB, the last sample at the top
    values = [300.0 + (-8.0, 0.0, 8.0)[i % 3] for i in range(61)]
    values[5], values[60] = 292.0, 308.0
    fig = rss_figures(_samples(values))
    assert fig["growth_after_minute_5_mb"] == 16.0  # the raw endpoints say it grew
    assert fig["window_minutes"] == 5.0
    assert abs(fig["growth_median_mb"]) <= 8.0  # minutes 5-10 against 55-60
    assert abs(fig["slope_after_minute_5_mb_per_hour"]) < 5.0
    assert fig["samples_after_minute_5"] == 56 and fig["samples_over_350_mb"] == 0


def test_a_steady_drift_is_seen_by_every_figure() -> None:
    fig = rss_figures(_samples([300.0 + i * 0.5 for i in range(61)]))
    assert fig["growth_after_minute_5_mb"] == 27.5
    assert fig["growth_median_mb"] == 25.0
    assert fig["slope_after_minute_5_mb_per_hour"] == 30.0
    assert fig["after_minute_5_max_mb"] == 330.0


def test_a_short_soak_has_windows_that_do_not_overlap() -> None:
    fig = rss_figures(_samples([300.0, 301.0, 302.0, 351.0, 300.0, 310.0, 311.0, 312.0, 360.0]))
    assert fig["window_minutes"] == 1.5
    assert fig["median_first_window_mb"] == 310.5 and fig["median_last_window_mb"] == 336.0
    assert fig["samples_over_350_mb"] == 1
    assert rss_figures(_samples([300.0, 301.0])) == {}
