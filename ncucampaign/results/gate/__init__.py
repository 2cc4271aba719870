"""results/gate/: comparing runs: verdicts, pooled samples, calibration, the gate and its tables."""
