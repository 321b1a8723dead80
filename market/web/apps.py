from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "market.web"
    label = "web"
