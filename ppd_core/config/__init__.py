"""Layer 1: what a scenario is. Errors, file locations, the read-only catalogs (GPUs, links, models), cluster
layouts and the frozen ``Scenario`` with its parser. Imports nothing else of ppd_core."""
