#!/usr/bin/env python
"""Django's command-line utility for Orchestra Studio (`python manage.py up`, ...)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings.dev")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        # A setting read from the environment is missing or wrong (studio/settings/env.py says
        # which, in a sentence): one line, not a traceback through the settings modules.
        sys.exit(f"ImproperlyConfigured: {error}")


if __name__ == "__main__":
    main()
