from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from .forms import KeyRevokingAdminPasswordChangeForm
from .models import User


@admin.register(User)
class MarketUserAdmin(UserAdmin):
    change_password_form = KeyRevokingAdminPasswordChangeForm  # a new password revokes the API keys
    list_display = ("username", "email", "is_owner", "is_buyer", "is_staff")
    fieldsets = UserAdmin.fieldsets + (("Marketplace", {"fields": ("is_owner", "is_buyer")}),)
