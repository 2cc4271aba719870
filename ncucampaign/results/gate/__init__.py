"""results/gate/: comparing runs: verdicts, pooled samples, calibration, each target's samples, the gate."""
