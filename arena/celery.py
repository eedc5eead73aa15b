from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")

app = Celery("arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Task modules live in rooms; settings.CELERY_IMPORTS names them.
# No results are kept (CELERY_RESULT_BACKEND is None), and the disabled backend that says so
# holds no state: one for the whole process. Otherwise each thread of a threads pool (and each
# web thread that sends a task) builds its own on its first task, scanning every installed
# package's entry points for backends, milliseconds of CPU each time.
app.conf.result_backend_thread_safe = True
