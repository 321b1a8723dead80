"""A buyer with a token, a budget row, ledger rows and release rows: nothing more."""

from django.db import models


class Buyer(models.Model):
    token = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=100)

    is_authenticated = True  # what DRF's IsAuthenticated asks of request.user


class Budget(models.Model):
    initial = models.DecimalField(max_digits=20, decimal_places=4)
    remaining = models.DecimalField(max_digits=20, decimal_places=4)


class Release(models.Model):
    budget = models.ForeignKey(Budget, on_delete=models.PROTECT)
    buyer = models.ForeignKey(Buyer, on_delete=models.PROTECT)
    epsilon = models.DecimalField(max_digits=20, decimal_places=4)
    value = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)


class LedgerRow(models.Model):
    """One leg of a debit: the buyer's (negative) or the budget's (positive); each release has two."""

    release = models.ForeignKey(Release, on_delete=models.PROTECT)
    account = models.CharField(max_length=40)
    amount = models.DecimalField(max_digits=20, decimal_places=4)
