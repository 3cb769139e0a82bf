"""The roof: the code location (Definitions, jobs, schedules, sensors, executors) and the CLI.

Nothing imports this package. Importing it does nothing: the process set-up (thread
variables, event batching, warning filters) runs in the entry points, `pipeline.definitions`
and `pipeline.cli.main`, through `pipeline.startup.prepare_process`.
"""
