"""The baseline of ``bench.load``: the least a Django + DRF endpoint on this stack must do for a
purchase, served by the same gunicorn command as the product, so that its requests per second
are what the stack allows (issue 14).

One POST endpoint (``views.DebitView``), authenticated by a token looked up in the database,
runs one transaction (``services.budget_debit``): ``SELECT ... FOR UPDATE`` of a budget row, a
check and a debit, two ledger rows and a release row holding a Laplace sample. Its own settings
(DEBUG off, persistent connections with health checks and the lock timeout as the product's),
its own database (tables made by ``migrate --run-syncdb``: ``seed``), nothing else installed.
"""
