"""The ``models``, ``run`` and ``report`` commands, and the parser that dispatches to them."""
