from django.urls import path
from django.views.decorators.gzip import gzip_page
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import keys, uploads, views, webhooks

v1 = [
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("keys/", keys.ApiKeyListView.as_view(), name="api-keys"),
    path("keys/<str:key_id>/", keys.ApiKeyDetailView.as_view(), name="api-key"),
    path("keys/<str:key_id>/rotate/", keys.ApiKeyRotateView.as_view(), name="api-key-rotate"),
    path("listings/", views.ListingListView.as_view(), name="api-listings"),
    path("listings/microdata/", views.MicrodataCreateView.as_view(), name="api-listings-microdata"),
    path("listings/compare/", views.ListingCompareView.as_view(), name="api-listings-compare"),
    path("listings/<int:listing_id>/", views.ListingDetailView.as_view(), name="api-listing"),
    path("listings/<int:listing_id>/close/", views.ListingCloseView.as_view(), name="api-listing-close"),
    path("listings/<int:listing_id>/reopen/", views.ListingReopenView.as_view(), name="api-listing-reopen"),
    path("listings/<int:listing_id>/quote/", views.QuoteView.as_view(), name="api-quote"),
    path("listings/<int:listing_id>/privacy-profile/", views.PrivacyProfileView.as_view(), name="api-privacy-profile"),
    path("listings/<int:listing_id>/quality/", views.ListingQualityView.as_view(), name="api-listing-quality"),
    path("datasets/", views.DatasetListView.as_view(), name="api-datasets"),
    path("datasets/<str:dataset_id>/", views.DatasetDetailView.as_view(), name="api-dataset"),
    path("datasets/<str:dataset_id>/budget/", views.DatasetBudgetView.as_view(), name="api-dataset-budget"),
    path("datasets/<str:dataset_id>/composition/", views.DatasetCompositionView.as_view(), name="api-dataset-composition"),
    path("datasets/<str:dataset_id>/fits/", views.DatasetFitsView.as_view(), name="api-dataset-fits"),
    path("datasets/<str:dataset_id>/sampled-sensitivity/", views.DatasetSampledSensitivityView.as_view(),
         name="api-dataset-sampled-sensitivity"),
    path("uploads/", uploads.UploadListView.as_view(), name="api-uploads"),
    path("uploads/<str:upload_id>/", uploads.UploadDetailView.as_view(), name="api-upload"),
    path("uploads/<str:upload_id>/dataset/", uploads.UploadDatasetView.as_view(), name="api-upload-dataset"),
    path("purchases/", views.PurchaseListView.as_view(), name="api-purchases"),
    path("purchases/<str:purchase_id>/", views.PurchaseDetailView.as_view(), name="api-purchase"),
    path("releases/", views.ReleaseListView.as_view(), name="api-releases"),
    path("releases/<str:release_id>/", views.ReleaseDetailView.as_view(), name="api-release"),
    path("releases/<str:release_id>/records.<str:fmt>", views.ReleaseRecordsView.as_view(), name="api-release-records"),
    path("releases/<str:release_id>/rows.<str:fmt>", views.ReleaseRowsView.as_view(), name="api-release-rows"),
    path("wallet/", views.WalletView.as_view(), name="api-wallet"),
    path("wallet/statement/", views.StatementView.as_view(), name="api-statement"),
    path("wallet/top-up/", views.TopUpView.as_view(), name="api-top-up"),
    path("earnings/", views.EarningsView.as_view(), name="api-earnings"),
    path("earnings/statement/", views.EarningsStatementView.as_view(), name="api-earnings-statement"),
    path("earnings/payouts/", views.PayoutListView.as_view(), name="api-payouts"),
    path("webhooks/endpoints/", webhooks.EndpointListView.as_view(), name="api-webhook-endpoints"),
    path("webhooks/endpoints/<str:endpoint_id>/", webhooks.EndpointDetailView.as_view(), name="api-webhook-endpoint"),
    path("webhooks/endpoints/<str:endpoint_id>/roll-secret/", webhooks.EndpointRollSecretView.as_view(),
         name="api-webhook-endpoint-roll-secret"),
    path("webhooks/endpoints/<str:endpoint_id>/test/", webhooks.EndpointTestView.as_view(), name="api-webhook-endpoint-test"),
    path("webhooks/deliveries/", webhooks.DeliveryListView.as_view(), name="api-webhook-deliveries"),
    path("webhooks/deliveries/<str:delivery_id>/", webhooks.DeliveryDetailView.as_view(), name="api-webhook-delivery"),
    path("webhooks/deliveries/<str:delivery_id>/replay/", webhooks.DeliveryReplayView.as_view(),
         name="api-webhook-delivery-replay"),
]

urlpatterns = [
    *[path(f"v1/{p.pattern}", p.callback, name=p.name) for p in v1],
    # compressed: the document is public and the same for everyone (half a megabyte of JSON, a tenth gzipped)
    path("schema/", gzip_page(SpectacularAPIView.as_view()), name="api-schema"),
    # the split view loads its start-up script from a URL (no inline script: the CSP forbids it)
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
]
