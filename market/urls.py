from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from market.accounts.forms import KeyRevokingPasswordChangeForm
from market.api.errors import not_found
from market.web.signin import AdminSignInForm, SignInView
from market.web.site_views import favicon, run_token

admin.site.login_form = AdminSignInForm  # password sign-ins are limited per account (market/accounts/signin.py)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("market.api.urls")),
    re_path(r"^api/", not_found),  # any other path under /api/: the API's error shape
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(form_class=KeyRevokingPasswordChangeForm), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("favicon.ico", favicon),
    path("-/run-token", run_token),  # scripts/run.sh's readiness probe (404 unless it set a token)  # browsers ask for it by themselves; pages link the SVG
    path("", include("market.web.urls")),
]

# the site's error pages (templates/404.html, 500.html), never Django's debug pages: DEBUG is off in
# production and in the demo (scripts/run.sh)
handler404 = "django.views.defaults.page_not_found"
handler500 = "market.web.error_views.server_error"
