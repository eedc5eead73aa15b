from __future__ import annotations

from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.db import models


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def _create(self, email: str, password: str | None, **extra) -> User:
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra) -> User:
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra) -> User:
        extra.update(is_staff=True, is_superuser=True)
        extra.setdefault("rater_pool", User.Pool.INTERNAL)
        return self._create(email, password, **extra)


class User(AbstractUser):
    """A rater or admin, identified by email; there are no usernames."""

    class Pool(models.TextChoices):
        CROWD = "crowd"
        INTERNAL = "internal"

    username = None
    email = models.EmailField("email address", unique=True)
    rater_pool = models.CharField(max_length=16, choices=Pool.choices, default=Pool.CROWD)
    banned_at = models.DateTimeField(null=True, blank=True)
    ban_reason = models.CharField(max_length=300, blank=True, default="")
    # The version of the rater's terms (settings.TERMS) this user accepted, and when.
    terms_version = models.CharField(max_length=32, blank=True, default="")
    terms_accepted_at = models.DateTimeField(null=True, blank=True)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    objects = UserManager()

    def __str__(self) -> str:
        return self.email

    @property
    def is_banned(self) -> bool:
        return self.banned_at is not None
