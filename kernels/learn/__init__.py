"""Learning kernels: arrays in, models and arrays out (no Dagster, no paths)."""
