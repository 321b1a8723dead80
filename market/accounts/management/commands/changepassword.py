"""Django's ``changepassword``, revoking the user's API keys with the new password in the same
transaction (as every path that sets a password does: ``market.accounts.services``). It overrides
Django's command because ``market.accounts`` comes before ``django.contrib.auth`` in
``INSTALLED_APPS``."""

import getpass

from django.contrib.auth.management.commands import changepassword
from django.db import transaction

from market.accounts.models import User
from market.accounts.services import api_keys_revoke_all


class Command(changepassword.Command):
    def handle(self, *args, **options):
        with transaction.atomic(using=options["database"]):
            done = super().handle(*args, **options)  # a refused password raises: nothing is revoked
            user = User.objects.using(options["database"]).get(username=options["username"] or getpass.getuser())
            api_keys_revoke_all(user=user)
        return done
