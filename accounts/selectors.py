"""Reads of accounts."""

from __future__ import annotations

from allauth.account.models import EmailAddress

from accounts.models import User


def terms_pending(*, user: User, version: str) -> bool:
    """Must the user accept this version of the rater's terms before battling? From the
    database: a websocket holds the user it connected with, from before they accepted."""
    return bool(version) and not User.objects.filter(pk=user.pk, terms_version=version).exists()


def user_email_verified(*, user: User) -> bool:
    """Has the user confirmed an email address of theirs?"""
    return EmailAddress.objects.filter(user=user, verified=True).exists()
