from django.contrib import admin
from django.urls import include, path
from django.views.generic import TemplateView

from studio.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("v1/", include("studio.openai_compat")),
    path("", TemplateView.as_view(template_name="studio/home.html"), name="home"),
]
