"""Statistics, plots and HTML/Markdown reports over a run directory (reads tables only)."""
