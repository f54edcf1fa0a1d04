"""Writes. Each service is `<entity>_<action>(*, ...)`, atomic, and raises ApplicationError."""
