"""Stage 4, results, in rooms cut by dependency, the ground first (each room imports only rooms
before it; tests/test_architecture.py):

- reading/: reading .ncu-rep reports (in worker processes, bounded in time and memory), what a
  report says (ncu's rule results, the charts' metrics and numbers), the records a run keeps of
  them, loading finished runs: the ground, importing no other room;
- gate/: comparing runs: verdicts, pooled samples, calibration, each target's samples, the gate and
  its report and tables;
- history/: references (baselines in git) and a metric's history across runs, where it changed;
- tables/: summarize's and compare's tables, and their CSV and JSON forms;
- page/: the HTML reports (a run's, a history's) and their SVG charts.

Flat here: what every room uses (metrics, units, scaled values, kernels' shares of GPU time), ncu's
findings ranked by what they would gain, and the run's closing lines (how far from its limit, what
sharing did).
"""
