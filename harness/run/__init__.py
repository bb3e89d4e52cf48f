"""Many sessions: the run config (`config`), planning (`plan`), executors (`executors`), the run
directory on disk (`store`), the run loop (`runner`) and the validation experiments (`validation`).
Imports `harness.sim` and below; never `reports` or `harness.cli`."""
