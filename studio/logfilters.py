import logging

from studio.crypto import redact_secrets


class SkipHealthProbe(logging.Filter):
    """Drop Django's error line for a 503 from /api/health: the body already says what is down,
    and `up` polls it while the worker starts."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        status = getattr(record, "status_code", None)
        return not (status == 503 and getattr(request, "path", "") == "/api/health")


class RedactSecrets(logging.Filter):
    """Blank the provider keys this process holds out of a record (its message, traceback
    and other text fields) before any handler writes it: providers echo a key in their
    errors, and litellm logs those at DEBUG. On a handler, or on a logger that has its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
        except Exception:  # a malformed record: logging reports it when the handler formats it
            return True
        clean = redact_secrets(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_text and (text := redact_secrets(record.exc_text)) != record.exc_text:
            # Handlers print exc_text; the exception itself still holds the key.
            record.exc_text, record.exc_info = text, None
        for name, value in list(vars(record).items()):
            if isinstance(value, str) and name != "msg":
                setattr(record, name, redact_secrets(value))
        return True
