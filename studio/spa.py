"""The browser studio: frontend/dist/index.html for every page route (React Router takes it
from there); its assets are static files under /static/ (servestatic)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie


@never_cache
@ensure_csrf_cookie
def index(request: HttpRequest) -> HttpResponse:
    page = settings.FRONTEND_DIST / "index.html"
    if not page.is_file():
        # Not built yet: say how, and keep the API reachable.
        return render(request, "studio/home.html", status=503)
    return HttpResponse(page.read_bytes(), content_type="text/html; charset=utf-8")
