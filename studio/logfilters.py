import logging


class SkipHealthProbe(logging.Filter):
    """Drop Django's error line for a 503 from /api/health: the body already says what is down,
    and `up` polls it while the worker starts."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        status = getattr(record, "status_code", None)
        return not (status == 503 and getattr(request, "path", "") == "/api/health")
