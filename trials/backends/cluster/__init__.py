"""Trial execution on a Ray cluster: the limiter actor, workers, credentials by name, the session."""
