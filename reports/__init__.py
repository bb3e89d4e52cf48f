"""What reads finished run directories: statistics, plots, HTML/Markdown reports and the OpenTelemetry
export (reads tables only, through ``harness.core``; never the runtime).

Modules, one job each: ``stats`` (metrics and bootstrap intervals), ``tables`` (table values and number
formats), ``markup`` (HTML and Markdown primitives), ``blocks`` (the block model every page is built from,
rendered to both formats), ``plots``, ``plot_child`` (drawing them in a child process) and
``calibration`` (figures), ``inputs`` (run-directory and format checks, the manifest), ``outputs``
(writing a report's files all or nothing), ``render`` (the report) with ``decision``, ``outcomes``,
``identical``, ``runtimes``, ``memory`` and ``tool_names`` (its sections), ``accounting`` (the report of a
replay), ``fit`` (the workload-fit report), ``sweep`` (the sweep page) with ``sweep_stats`` (its rankings
and their stability) and ``sweep_plots`` (its figures), ``compare`` (the compare gate), ``summary`` (a
run's closing table), ``explorer`` and ``explorer_assets`` (the session explorer), ``otel`` (a run as
OpenTelemetry traces, to a file or an OTLP receiver), and the package ``validation`` (the validation
document, its checks, and the status paragraph every report carries).
"""
