from __future__ import annotations

from django.urls import path

from arena.battles.consumers import BattleConsumer

websocket_urlpatterns = [path("ws/battle/", BattleConsumer.as_asgi())]
