"""The baseline's rows: what a purchase through a queue needs, nothing more."""

from django.db import models

M = dict(max_digits=20, decimal_places=4)


class Buyer(models.Model):
    token = models.CharField(max_length=64, unique=True)  # the API key, looked up on every request
    name = models.CharField(max_length=100)

    is_authenticated = True  # what DRF's IsAuthenticated asks of request.user


class Wallet(models.Model):
    buyer = models.OneToOneField(Buyer, on_delete=models.PROTECT)
    initial = models.DecimalField(max_digits=20, decimal_places=2)
    balance = models.DecimalField(max_digits=20, decimal_places=2)


class Listing(models.Model):
    price_c = models.DecimalField(max_digits=20, decimal_places=4)  # linear price: credits per epsilon
    ceiling = models.DecimalField(**M)
    dim = models.IntegerField(default=10)


class PathRow(models.Model):
    """The listing's noise path: the release task locks it, so a listing's releases are drawn one at a time."""

    listing = models.OneToOneField(Listing, on_delete=models.PROTECT)
    draws = models.IntegerField(default=0)


class Holding(models.Model):
    buyer = models.ForeignKey(Buyer, on_delete=models.PROTECT)
    listing = models.ForeignKey(Listing, on_delete=models.PROTECT)
    purchased = models.DecimalField(**M, default=0)
    released = models.DecimalField(**M, default=0)
    ceiling = models.DecimalField(**M)

    class Meta:
        unique_together = [("buyer", "listing")]


class Purchase(models.Model):
    buyer = models.ForeignKey(Buyer, on_delete=models.PROTECT)
    listing = models.ForeignKey(Listing, on_delete=models.PROTECT)
    idempotency_key = models.CharField(max_length=64, null=True, unique=True)
    level_from = models.DecimalField(**M)
    level_to = models.DecimalField(**M)
    price = models.DecimalField(max_digits=20, decimal_places=2)
    status = models.CharField(max_length=10, default="queued")  # queued, released
    created_at = models.DateTimeField(auto_now_add=True)


class LedgerRow(models.Model):
    """One leg of a purchase's transfer: the buyer's (negative) and the listing's (positive)."""

    purchase = models.ForeignKey(Purchase, on_delete=models.PROTECT)
    account = models.CharField(max_length=40)
    amount = models.DecimalField(max_digits=20, decimal_places=2)


class Release(models.Model):
    purchase = models.OneToOneField(Purchase, on_delete=models.PROTECT)
    values = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
