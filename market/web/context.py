
from market.ledger.selectors import wallet_balance
def marketplace(request):
    """What every page's header needs: demo mode and, for a buyer, their wallet's balance (an
    owner-only account has no wallet to show: its header links to its earnings instead)."""
    from django.conf import settings

    user = getattr(request, "user", None)
    signed_in = bool(user and user.is_authenticated)
    return {
        "demo_mode": settings.DEMO_MODE,
        "wallet_balance": wallet_balance(user=user) if signed_in and user.is_buyer else None,
    }
