"""The release engine.

The mathematics (``mechanism``, ``path``, ``postprocess``) is plain numpy/scipy
and never imports Django, so it can be tested and benchmarked alone. Nothing in
this ``__init__`` may import Django either.
"""
