"""The command line: one module per command (each defines `add_parser` and `run`), plus what they
share. `ncucampaign.cli` holds the command table and maps errors to exit codes."""
