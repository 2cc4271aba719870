"""results/page/: the HTML reports (a run's, a history's) and their SVG charts."""
