"""The command line: one module per command (each exports its COMMAND: commands/parts/command.py), plus what they share.
`ncucampaign.cli` holds the command table, registers each command's parser and maps errors to exit codes."""
