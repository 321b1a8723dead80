"""``python -m gradual_client``: the ``gradual`` command line."""

from .cli import main

raise SystemExit(main())
