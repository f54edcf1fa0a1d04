from django.contrib import admin
from django.urls import include, path, re_path

from studio import metrics, spa
from studio.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("v1/", include("studio.openai_compat")),
    path("metrics", metrics.metrics, name="metrics"),
    # Every other path is a page of the browser studio; unknown API and static paths stay 404s.
    re_path(r"^(?!api/|v1/|admin/|static/|ws/).*$", spa.index, name="home"),
]
