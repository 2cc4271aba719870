"""results/history/: references (a baseline per GPU model, in git) and a metric's history across runs."""
