"""Writes of accounts."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.db import transaction
from django.utils import timezone

from accounts.models import User


def terms_accept(*, user: User, version: str) -> None:
    """The user accepts this version of the rater's terms; accepting it again changes nothing."""
    User.objects.filter(pk=user.pk).exclude(terms_version=version).update(
        terms_version=version, terms_accepted_at=timezone.now()
    )


@transaction.atomic
def user_ensure(*, email: str, password: str, admin: bool = False) -> User:
    """The user with this address, created (a superuser if ``admin``) or given ``password``,
    with the address confirmed."""
    user = User.objects.filter(email=email).first()
    if user is None:
        create = User.objects.create_superuser if admin else User.objects.create_user
        user = create(email, password)
    else:
        user.set_password(password)
        user.save(update_fields=["password"])
    EmailAddress.objects.update_or_create(
        user=user, email=email, defaults={"verified": True, "primary": True}
    )
    return user
