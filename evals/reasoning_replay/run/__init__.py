"""One run's cells: the shared context, the settings probe, the text step, sampling, the scheduler."""
