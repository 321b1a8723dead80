from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from market.api.errors import not_found
from market.web.signin import AdminSignInForm, SignInView

admin.site.login_form = AdminSignInForm  # password sign-ins are limited per account (market/accounts/signin.py)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("market.api.urls")),
    re_path(r"^api/", not_found),  # any other path under /api/: the API's error shape
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("", include("market.web.urls")),
]
