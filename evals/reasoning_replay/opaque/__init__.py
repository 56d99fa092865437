"""Step 2 (``opaque``): replay the provider's own opaque reasoning, once per API kind."""
