from django.urls import path

from . import earnings_views, owner_views, trust_views

urlpatterns = [
    path("", owner_views.dashboard, name="owner"),
    path("datasets/new/", owner_views.dataset_new, name="owner-dataset-new"),
    path("datasets/<str:dataset_id>/columns/", owner_views.dataset_columns, name="owner-dataset-columns"),
    path("datasets/<str:dataset_id>/status/", owner_views.dataset_status, name="owner-dataset-status"),
    path("datasets/<str:dataset_id>/budget/", owner_views.dataset_budget, name="owner-dataset-budget"),
    path("datasets/<str:dataset_id>/remove/", owner_views.dataset_remove_view, name="owner-dataset-remove"),
    path("datasets/<str:dataset_id>/sampled-sensitivity/", owner_views.dataset_sampled_sensitivity,
         name="owner-dataset-sampled-sensitivity"),
    path("listings/new/", owner_views.listing_new, name="owner-listing-new"),
    path("listings/new-microdata/", owner_views.listing_new_microdata, name="owner-listing-new-microdata"),
    path("listings/<int:listing_id>/", owner_views.listing_view, name="owner-listing"),
    path("listings/<int:listing_id>/edit/", owner_views.listing_edit, name="owner-listing-edit"),
    path("listings/<int:listing_id>/price/", owner_views.listing_price, name="owner-listing-price"),
    path("listings/<int:listing_id>/close/", owner_views.listing_close_view, name="owner-listing-close"),
    path("listings/<int:listing_id>/reopen/", owner_views.listing_reopen_view, name="owner-listing-reopen"),
    path("trust/", trust_views.trust, name="owner-trust"),
    path("trust/settings/", trust_views.trust_settings, name="owner-trust-settings"),
    path("trust/listings/", trust_views.trust_listings, name="owner-trust-listings"),
    path("trust/tiers/", trust_views.trust_tiers, name="owner-trust-tiers"),
    path("trust/tiers/buyers/", trust_views.trust_tier_members, name="owner-trust-tier-members"),
    path("trust/graph/", trust_views.trust_edges, name="owner-trust-edges"),
    path("trust/graph/buyers/", trust_views.trust_node_members, name="owner-trust-node-members"),
]

# an owner's earnings and payouts (market/web/earnings_views.py)
urlpatterns.append(path("earnings/", earnings_views.earnings, name="owner-earnings"))
