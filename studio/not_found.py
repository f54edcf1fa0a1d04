"""Paths nobody serves, answered in the shape of the part of the site they fall under: JSON
under /api/ (`{"detail": ...}`), OpenAI's error shape under /v1/, plain text for a static file
that is not there. Django's own 404 is an HTML page (with DEBUG, one that lists every URL
pattern), and servestatic raises for a missing static file with DEBUG on, which Django shows
as a 500."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotFound, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from servestatic.middleware import ServeStaticMiddleware
from servestatic.responders import MissingFileError

from studio.openai_errors import OpenAIError, error_response


@csrf_exempt
def api_not_found(request: HttpRequest) -> HttpResponse:
    return JsonResponse(
        {"detail": f"No API endpoint at {request.method} {request.path}. The endpoints are listed at /api/docs."},
        status=404,
    )


@csrf_exempt
async def v1_not_found(request: HttpRequest) -> HttpResponse:
    message = f"Unknown path {request.path}: /v1 serves chat/completions, models and models/<id>."
    return error_response(OpenAIError(404, message, code="not_found"))


class StaticMiddleware(ServeStaticMiddleware):
    """servestatic's middleware, with a missing static file a 404 saying which, DEBUG or not."""

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        try:
            return await super().__call__(request)
        except MissingFileError as missing:
            return HttpResponseNotFound(str(missing), content_type="text/plain; charset=utf-8")
