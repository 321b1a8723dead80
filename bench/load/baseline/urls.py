from django.urls import path

from .views import DebitView, ping

urlpatterns = [
    path("debit/", DebitView.as_view()),
    path("ping/", ping),
]
