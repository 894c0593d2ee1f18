"""pytest fixtures: a perceptrond per test, from PERCEPTROND (the binary; PERCEPTRON_CLI names
the command-line client), with the package imported from this source tree and its stubs from
PERCEPTRON_STUBS (the build's)."""
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
if os.environ.get("PERCEPTRON_STUBS"):
    sys.path.insert(0, os.environ["PERCEPTRON_STUBS"])
sys.path.insert(0, str(HERE.parent.parent.parent / "tests" / "support"))

from perceptrond_process import Perceptrond  # noqa: E402

import perceptrond  # noqa: E402


@pytest.fixture
def server():
    binary = os.environ.get("PERCEPTROND")
    if not binary:
        pytest.fail("PERCEPTROND names the perceptrond binary to test against")
    s = Perceptrond(binary, "--durability=none")
    yield s
    assert s.stop() == 0, "perceptrond did not exit cleanly"


@pytest.fixture
def client(server):
    with perceptrond.Client(server.target) as c:
        yield c
