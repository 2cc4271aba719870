"""Stage 4, results, in rooms named for their jobs:

- reading/: reading .ncu-rep reports (in worker processes, bounded in time and memory), the records
  a run keeps of them, loading finished runs;
- gate/: comparing runs: verdicts, pooled samples, calibration, the gate and its report;
- findings/: ncu's rule results ranked by what they would gain, and the timing pass's weights;
- page/: the HTML report, its charts, rooflines and SVG;
- tables/: summarize's and compare's tables, and their CSV and JSON forms.

Flat here: what every room uses (metrics, units, scaled values) and the run's closing lines (how far
from its limit, what sharing did).
"""
