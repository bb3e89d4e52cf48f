"""Statistics, plots and HTML/Markdown reports over a run directory (reads tables only, through
``harness.core``; never the runtime).

Flat modules, one job each: ``stats`` (metrics and bootstrap intervals), ``tables`` (table values and
number formats), ``markup`` (HTML and Markdown primitives), ``plots`` and ``calibration`` (figures),
``inputs`` (run-directory and format checks, the manifest), ``render`` (the report), ``sweep`` (the
sweep page), ``compare`` (the compare gate), ``summary`` (a run's closing table), and ``validation``
(the validation document) with ``validation_data``, ``validation_checks``, ``validation_trap`` and
``validation_seed_article``.
"""
