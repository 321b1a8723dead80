from django.urls import include, path

from . import account_views, site_views, views, webhook_views

app_name = "web"

urlpatterns = [
    path("", views.catalogue, name="catalogue"),
    path("signup/", views.signup, name="signup"),
    path("how-it-works/", site_views.how_it_works, name="how-it-works"),
    path("listings/<int:listing_id>/", views.listing_detail, name="listing"),
    path("listings/<int:listing_id>/buy/", views.listing_buy, name="listing-buy"),
    path("purchases/<uuid:purchase_id>/", views.purchase_detail, name="purchase"),
    path("purchases/<uuid:purchase_id>/status/", views.purchase_status, name="purchase-status"),
    path("library/", views.library, name="library"),
    path("library/releases/<str:release_id>.<str:fmt>", views.release_download, name="release-download"),
    path("library/releases/<str:release_id>/records.<str:fmt>", views.release_records, name="release-records"),
    path("library/releases/<str:release_id>/rows.<str:fmt>", views.release_rows, name="release-rows"),
    path("wallet/top-up/", views.top_up, name="top-up"),
    path("owner/", include("market.web.owner_urls")),
    path("account/", account_views.account, name="account"),
    path("account/roles/", account_views.role_add, name="account-role-add"),
    path("account/roles/drop/", account_views.role_drop, name="account-role-drop"),
    path("account/keys/", account_views.key_create, name="account-key-create"),
    path("account/keys/<str:key_id>/revoke/", account_views.key_revoke, name="account-key-revoke"),
    path("account/keys/<str:key_id>/rotate/", account_views.key_rotate, name="account-key-rotate"),
    path("account/webhooks/", webhook_views.webhook_create, name="account-webhook-create"),
    path("account/webhooks/<str:endpoint_id>/roll/", webhook_views.webhook_roll, name="account-webhook-roll"),
    path("account/webhooks/<str:endpoint_id>/delete/", webhook_views.webhook_delete, name="account-webhook-delete"),
    path("account/webhooks/deliveries/<str:delivery_id>/replay/", webhook_views.webhook_replay,
         name="account-webhook-replay"),
]
