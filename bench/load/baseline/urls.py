from django.urls import path

from .views import ListingView, PurchasesView, PurchaseView, QuoteView, ping

urlpatterns = [
    path("api/v1/listings/<int:pk>/quote/", QuoteView.as_view()),
    path("api/v1/listings/<int:pk>/", ListingView.as_view()),
    path("api/v1/purchases/", PurchasesView.as_view()),
    path("api/v1/purchases/<int:pk>/", PurchaseView.as_view()),
    path("ping/", ping),
]
