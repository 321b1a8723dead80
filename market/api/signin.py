"""The API's username-and-password exchange, through the sign-in limits of
``market.accounts.signin`` (a locked account answers 429 with Retry-After)."""

from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer

from market.accounts.signin import signin_authenticate


class CredentialsSerializer(AuthTokenSerializer):
    """DRF's AuthTokenSerializer, signing in through ``signin_authenticate``:
    ``validated_data["user"]`` is the user; wrong credentials are a 400;
    a locked account raises TooManyAttempts (the API's 429)."""

    def validate(self, attrs):
        user = signin_authenticate(
            request=self.context.get("request"), username=attrs["username"], password=attrs["password"]
        )
        if user is None:
            raise serializers.ValidationError("Unable to log in with provided credentials.", code="authorization")
        attrs["user"] = user
        return attrs
