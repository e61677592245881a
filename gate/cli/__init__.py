"""The command line (typer + rich). The only place that prints or parses arguments."""
