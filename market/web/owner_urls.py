from django.urls import path

from . import owner_views

urlpatterns = [
    path("", owner_views.dashboard, name="owner"),
    path("datasets/new/", owner_views.dataset_new, name="owner-dataset-new"),
    path("listings/new/", owner_views.listing_new, name="owner-listing-new"),
    path("listings/<int:listing_id>/", owner_views.listing_view, name="owner-listing"),
]
