"""What the commands are built from: the Command record and its parser (command.py), what several commands share
(common.py), the consoles (consoles.py), and the progress lines and tables of a run (progress.py, progress_text.py)."""
