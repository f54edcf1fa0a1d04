"""The parts of `manage.py up` (studio/management/commands/up.py), one concern a module:

- `plan`: the options checked into a `Plan`, and the addresses it serves on;
- `database`: migrations and bootstrap one web host at a time, a worker host's wait for them,
  and the connection budget line;
- `probes`: free ports, live pids, /api/health, a worker's ping, and the wait until a role serves;
- `children`: the web server and worker as child processes, the services file, and restarts;
- `model_server`: the local model server that `up` starts.
"""
