from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from market.api.errors import not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("market.api.urls")),
    re_path(r"^api/", not_found),  # any other path under /api/: the API's error shape
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("", include("market.web.urls")),
]
