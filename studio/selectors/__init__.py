"""Reads. Selectors apply visibility rules and return querysets or rows."""
