from django.urls import include, path

from . import views

app_name = "web"

urlpatterns = [
    path("", views.catalogue, name="catalogue"),
    path("signup/", views.signup, name="signup"),
    path("listings/<int:listing_id>/", views.listing_detail, name="listing"),
    path("listings/<int:listing_id>/buy/", views.listing_buy, name="listing-buy"),
    path("purchases/<uuid:purchase_id>/", views.purchase_detail, name="purchase"),
    path("purchases/<uuid:purchase_id>/status/", views.purchase_status, name="purchase-status"),
    path("library/", views.library, name="library"),
    path("library/releases/<str:release_id>.<str:fmt>", views.release_download, name="release-download"),
    path("wallet/top-up/", views.top_up, name="top-up"),
    path("owner/", include("market.web.owner_urls")),
]
