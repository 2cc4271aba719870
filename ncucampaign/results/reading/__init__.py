"""results/reading/: reading reports (in worker processes, bounded in time and memory) and loading runs."""
