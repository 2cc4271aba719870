"""results/findings/: ncu's rule results ranked, and the weights of the timing pass."""
