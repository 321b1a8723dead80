"""Django's password forms, saving through the accounts service (``user_password_set``) so that a
password changed on the password page or in the admin revokes the user's API keys."""

from django.contrib.auth.forms import AdminPasswordChangeForm, PasswordChangeForm

from .services import user_password_set


class KeyRevokingPasswordChangeForm(PasswordChangeForm):
    """The password page (``/accounts/password/``): the old password, then the new one twice."""

    def save(self, commit=True):
        return user_password_set(user=self.user, raw_password=self.cleaned_data["new_password1"])


class KeyRevokingAdminPasswordChangeForm(AdminPasswordChangeForm):
    """The admin's "change password" form (it may also turn password sign-in off)."""

    def save(self, commit=True):
        usable = self.cleaned_data["set_usable_password"]
        return user_password_set(user=self.user, raw_password=self.cleaned_data["password1"] if usable else None)
