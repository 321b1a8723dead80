"""The baseline's token authentication (its own module: DRF's settings import it before the views)."""

from rest_framework import authentication, exceptions

from .models import Buyer


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <token>``, looked up in the database: one indexed query, as
    DRF's TokenAuthentication."""

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        if scheme != "Bearer" or not token:
            return None
        buyer = Buyer.objects.filter(token=token).first()
        if buyer is None:
            raise exceptions.AuthenticationFailed("unknown token")
        return buyer, token

    def authenticate_header(self, request):
        return "Bearer"
