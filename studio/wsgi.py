"""WSGI entry point (the studio normally runs under ASGI, see asgi.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings.production")

application = get_wsgi_application()
