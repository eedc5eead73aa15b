"""Reads of accounts."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.db.models import Exists, OuterRef

from accounts.models import User


def terms_pending(*, user: User, version: str) -> bool:
    """Must the user accept this version of the rater's terms before battling? From the
    database: a websocket holds the user it connected with, from before they accepted."""
    return bool(version) and not User.objects.filter(pk=user.pk, terms_version=version).exists()


def user_email_verified(*, user: User) -> bool:
    """Has the user confirmed an email address of theirs?"""
    return EmailAddress.objects.filter(user=user, verified=True).exists()


def email_verified_exists() -> Exists:
    """``user_email_verified`` as an expression on a query of users, so a caller reading the
    user's row anyway learns it in the same statement."""
    return Exists(EmailAddress.objects.filter(user=OuterRef("pk"), verified=True))
