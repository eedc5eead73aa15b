"""Reads of accounts."""

from __future__ import annotations

from allauth.account.models import EmailAddress

from accounts.models import User


def user_email_verified(*, user: User) -> bool:
    """Has the user confirmed an email address of theirs?"""
    return EmailAddress.objects.filter(user=user, verified=True).exists()
