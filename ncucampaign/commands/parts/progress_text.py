"""What the progress display says of an attempt's launches (execute/attempt/launches.py): how many of how many, how
long it has run, and the time left, with the seconds a launch it counts with (priced, or measured by this attempt)."""

from __future__ import annotations

from ncucampaign.execute.attempt.launches import LaunchCount


def launches_text(name: str, count: LaunchCount, now: float, done: bool) -> str:
    """'shared/2: 60/240 launches in 14 s, about 42 s left (0.7 s a launch, measured)'."""
    took = duration(now - count.started)
    if done:
        return f"{name}: {count.profiled} launches profiled in {took}"
    left = count.left_s()
    rate = f"{count.seconds_a_launch():.2g} s a launch, {'measured' if count.measured else 'priced'}"
    if count.profiled == 0 and count.expected:
        return f"{name}: {count.expected:,} launches to profile at most, about {duration(left or 0.0)} ({rate})"
    of = f"/{count.expected:,}" if count.expected else ""
    estimate = f", about {duration(left)} left ({rate})" if left is not None else ""
    return f"{name}: {count.profiled:,}{of} launches in {took}{estimate}"


def duration(seconds: float) -> str:
    """'42 s', '3 min 20 s', '1 h 05 min'."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:.0f} s" if seconds >= 1 else f"{seconds:.1f} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
