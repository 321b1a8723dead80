"""The sign-in pages (the site's and the admin's), through the sign-in limits of
``market.accounts.signin``: a locked account is told in the form when to try again."""

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.views.decorators.debug import sensitive_variables

from market.accounts.signin import signin_authenticate
from market.core.errors import TooManyAttempts


class LimitedSignInMixin:
    """Django's AuthenticationForm.clean, signing in through ``signin_authenticate``."""

    refusal: TooManyAttempts | None = None

    @sensitive_variables()
    def clean(self):
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is not None and password:
            try:
                self.user_cache = signin_authenticate(request=self.request, username=username, password=password)
            except TooManyAttempts as refusal:
                self.refusal = refusal
                raise ValidationError(refusal.message, code=refusal.code) from None
            if self.user_cache is None:
                raise self.get_invalid_login_error()
            self.confirm_login_allowed(self.user_cache)
        return self.cleaned_data


class SignInForm(LimitedSignInMixin, AuthenticationForm):
    pass


class AdminSignInForm(LimitedSignInMixin, AdminAuthenticationForm):
    pass


class SignInView(auth_views.LoginView):
    authentication_form = SignInForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.refusal is not None:  # locked: the form says until when; the status and header too
            response.status_code = 429
            response["Retry-After"] = str(form.refusal.retry_after)
        return response
