from django.apps import AppConfig


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Orchestra Studio"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from studio.selectors.setup_cache import connect_signals

        connect_signals()
