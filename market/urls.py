from django.contrib import admin
from django.urls import include, path, re_path

from market.api.errors import not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("market.api.urls")),
    re_path(r"^api/", not_found),  # any other path under /api/: the API's error shape
]
