"""results/page/: the HTML report: its page, charts, rooflines and SVG."""
