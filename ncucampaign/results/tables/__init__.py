"""results/tables/: summarize's and compare's tables, and their CSV and JSON forms."""
