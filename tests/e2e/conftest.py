"""pytest's set-up for the end-to-end tests in Python: the shared launcher (tests/support), the
generated stubs (PERCEPTRON_STUBS) and the perceptrond package (client/python) on the path.
CTest passes the binaries and directories in the environment (tests/e2e/CMakeLists.txt)."""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "client" / "python")]
if os.environ.get("PERCEPTRON_STUBS"):
    sys.path.insert(0, os.environ["PERCEPTRON_STUBS"])
