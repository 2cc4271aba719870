"""Stage 4, results, in rooms cut by dependency, the ground first (docs/architecture.md): reading/, gate/,
history/, tables/, page/. Flat here: what every room uses (metrics, units, scaled values, GPU-time shares),
ncu's findings ranked by gain, and a run's closing lines (its limit, what sharing did)."""
