from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """A person on the marketplace: an owner, a buyer, or both."""

    is_owner = models.BooleanField(default=False, help_text="May upload datasets and list them.")
    is_buyer = models.BooleanField(default=True, help_text="May buy releases.")
