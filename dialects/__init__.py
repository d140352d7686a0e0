"""tessera's IR: the ``tsr`` graph dialect (and, later, kernel-level dialects)."""
