"""Statistics, plots and HTML/Markdown reports over a run directory (reads tables only, through
``harness.core``; never the runtime).

Modules, one job each: ``stats`` (metrics and bootstrap intervals), ``tables`` (table values and number
formats), ``markup`` (HTML and Markdown primitives), ``blocks`` (the block model every page is built from,
rendered to both formats), ``plots`` and ``calibration`` (figures), ``inputs`` (run-directory and format
checks, the manifest), ``render`` (the report), ``accounting`` (the report of a replay), ``fit`` (the
workload-fit report), ``sweep`` (the sweep page) with ``sweep_stats`` (its rankings and their stability)
and ``sweep_plots`` (its figures), ``compare`` (the compare gate), ``summary`` (a run's closing table),
and the package ``validation`` (the validation document, its checks, and the status paragraph every
report carries).
"""
