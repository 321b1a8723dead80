"""The like-for-like baseline of ``bench.load`` (issue 32): the product's architecture in the least code.

A Django + DRF project with its own models (``models``: buyers with an API token, wallets, listings
each with a path row, holdings with purchased / released / ceiling, ledger rows, purchases,
releases), served by the same gunicorn command and settings as the product, with a Celery worker
on Redis (queue ``releases``). It answers the same requests the product's buyers make
(``bench.load.buyers``), at the same paths:

* ``GET /api/v1/listings/{id}/quote/?epsilon=``: the listing and the buyer's holding read, the price
  of the step computed (``views``);
* ``POST /api/v1/purchases/`` (``Prefer: wait=N``): the token looked up in the database, the wallet
  debited by a guarded ``UPDATE``, the holding locked, checked and raised, two ledger rows and a
  purchase row written, and on commit a Celery task queued by id (``trading``); the request then
  waits on Redis (``BLPOP`` on the purchase's key) up to N seconds: 201 with the release, else 202;
* ``GET /api/v1/purchases/{id}/`` (``Prefer: wait``) and ``GET /api/v1/listings/{id}/`` (the level held);
* the task (``tasks.release``) locks the listing's path row, draws numpy Laplace noise for 10
  values, writes the release, marks the purchase released and pushes to the purchase's Redis key.

Nothing of the product is imported. Tables are made by ``migrate --run-syncdb`` (``seed``).
"""
