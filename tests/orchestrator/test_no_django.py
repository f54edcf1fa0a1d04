import subprocess
import sys

CODE = """
import importlib, pkgutil, sys
import orchestrator
for module in pkgutil.walk_packages(orchestrator.__path__, "orchestrator."):
    importlib.import_module(module.name)
bad = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
print(bad)
sys.exit(1 if bad else 0)
"""


def test_no_orchestrator_module_imports_django() -> None:
    result = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
