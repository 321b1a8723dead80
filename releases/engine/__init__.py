"""The release engine: the mathematics alone (numpy, scipy, mpmath; no Django, no database).

``mechanism`` and ``path``: the float Laplace path (relax, tighten, bridge) and the l2 path;
``lattice`` and ``exact_bounds``: the exact integer (lattice) path and its exact coins;
``postprocess``: rounding and clamping of released values, and their error bounds;
``profile``: the privacy-loss profile; ``risk``: privacy at risk; ``guarantee``: the
privacy statements shown with a release; ``mechanisms``: each release mechanism as one object
over the modules above (its levels, steps, bounds, profile and codecs), and their registry. The marketplace (``releases`` and ``market``) calls
into it; nothing here calls back (an import-linter contract in ``.importlinter`` checks it).
"""
