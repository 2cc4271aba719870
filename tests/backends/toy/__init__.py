"""A toy batch system, to show what a new one is: this folder, and one line in the table (entry.py adds it, as
backends/systems.py would hold it). It runs each task of a submission at once, here, through its own task
command, as a scheduler would start them."""
