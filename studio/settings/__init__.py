"""Settings, split by environment: `base` (shared), `dev`, `test` and `production`.

Every value that varies between machines is read from the environment in `env.py`.
"""
