"""results/reading/: reading reports (in worker processes, bounded), what they say, and loading runs."""
