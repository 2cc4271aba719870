"""Stage 4, results: reading .ncu-rep reports, the metrics ncucampaign records, loading finished runs,
tidy tables, comparing two runs, the HTML report."""
