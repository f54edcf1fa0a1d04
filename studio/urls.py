from django.contrib import admin
from django.urls import include, path, re_path

from studio import metrics, spa
from studio.api import api
from studio.not_found import api_not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    re_path(r"^api/", api_not_found),  # JSON, not Django's HTML page
    path("v1/", include("studio.openai_compat")),
    path("metrics", metrics.metrics, name="metrics"),
    # Every other path is a page of the browser studio; unknown API and static paths stay 404s.
    re_path(r"^(?!api/|v1/|admin/|static/|ws/).*$", spa.index, name="home"),
]
