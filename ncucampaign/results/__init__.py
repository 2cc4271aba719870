"""Stage 4, results, in rooms cut by dependency, the ground first (tests/test_architecture.py):

- reading/: reports read in bounded workers, what they say, a run's records, finished runs loaded;
- gate/: verdicts, pooled samples, calibration, the gate, its report and tables;
- history/: references (baselines in git) and a metric's history across runs;
- tables/: summarize's and compare's tables, and their CSV and JSON forms;
- page/: the HTML reports and their SVG charts.

Flat here: what every room uses (metrics, units, scaled values, GPU-time shares), ncu's findings
ranked by gain, and a run's closing lines (its limit, what sharing did).
"""
