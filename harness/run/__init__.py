"""Many sessions: the run config (`config`), the run plan (`plan`), the worker of a simulated run
(`worker`), executors that schedule workers (`executors`), the run directory on disk and its resume
(`directory`), the Parquet writer of its tables (`table_writer`), the resume log's parts (`parts`), the
merge of shards (`merge`), the run loop (`runner`), accounting runs of recorded traces (`accounting`,
`traces`), the workload fit (`fitting`), the speed benchmark (`speed`) and the validation experiments
(`validation`).
Imports `harness.sim` and below; never `reports` or `harness.cli`."""
