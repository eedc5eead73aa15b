from __future__ import annotations

import os
import sys
import threading

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
django_asgi_app = get_asgi_application()

from django.conf import settings  # noqa: E402

# The web process's threads and its event loop take turns sooner (settings: why).
sys.setswitchinterval(settings.WEB_SWITCH_INTERVAL_MS / 1000)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from arena.middleware import SameOriginWebsocket, auth_stack  # noqa: E402
from arena.routing import websocket_urlpatterns  # noqa: E402
from arena.tagging.language import language_warm  # noqa: E402
from ranking.public_asgi import PublicPages  # noqa: E402

# The language detector's model takes about a second to load: loaded beside the server's start
# (a thread, so serving starts at once), not in the first rater's battle start.
threading.Thread(target=language_warm, name="language-model", daemon=True).start()

application = ProtocolTypeRouter(
    {
        # Visitors' public pages replayed before Django; everything else is Django's.
        "http": PublicPages(django_asgi_app),
        "websocket": SameOriginWebsocket(auth_stack(URLRouter(websocket_urlpatterns))),
    }
)
