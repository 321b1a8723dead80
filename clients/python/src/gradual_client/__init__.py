"""gradual-client: the Gradual marketplace's buyer API from Python.

    from gradual_client import Client
    client = Client("https://gradual.example.org", "gradual_...")
    listing = client.listings(search="clinic")[0]
    purchase = client.buy(listing, epsilon=1.5)        # waits for the release
    print(purchase.release.to_frame())                  # one row per statistic (with pandas)
"""

__version__ = "0.1.0"

from .client import Client, decimal_text  # noqa: E402
from .config import ConfigError, Settings, resolve, save_profile  # noqa: E402
from .errors import (  # noqa: E402
    AuthenticationError,
    ConflictError,
    GradualError,
    InsufficientFundsError,
    NetworkError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PriceChangedError,
    PurchaseFailed,
    RateLimitError,
    ReleaseTimeout,
    ServerError,
    ValidationError,
)
from .models import (  # noqa: E402
    Accuracy,
    Dataset,
    Earnings,
    Listing,
    Purchase,
    Quote,
    Reading,
    Release,
    StatementLine,
    StatisticBound,
    Wallet,
    releases_to_frame,
)

__all__ = [
    "Accuracy", "AuthenticationError", "Client", "ConfigError", "ConflictError", "Dataset", "Earnings", "GradualError",
    "InsufficientFundsError", "Listing", "NetworkError", "NotFoundError", "PayloadTooLargeError",
    "PermissionDeniedError", "PriceChangedError", "Purchase", "PurchaseFailed", "Quote", "RateLimitError", "Reading", "Release",
    "ReleaseTimeout", "ServerError", "Settings", "StatementLine", "StatisticBound", "ValidationError", "Wallet",
    "__version__", "decimal_text", "releases_to_frame", "resolve", "save_profile",
]
