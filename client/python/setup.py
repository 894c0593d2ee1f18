"""Builds the package with its gRPC stubs, generated from proto/ by Debian's protoc and
grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc) into the build tree, never into
the source tree: they install as the `perceptron.v1` package beside `perceptrond`. Nothing is
written into the source tree."""
import hashlib
import pathlib
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

PROTO = pathlib.Path(__file__).resolve().parent.parent.parent / "proto"


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        protoc = shutil.which("protoc")
        plugin = shutil.which("grpc_python_plugin")
        if not protoc or not plugin:
            raise SystemExit("building perceptrond needs protoc and grpc_python_plugin "
                             "(Debian: protobuf-compiler protobuf-compiler-grpc)")
        subprocess.run([protoc, f"-I{PROTO}", f"--python_out={self.build_lib}",
                        f"--grpc_python_out={self.build_lib}",
                        f"--plugin=protoc-gen-grpc_python={plugin}",
                        "perceptron/v1/perceptron.proto", "perceptron/v1/state.proto"],
                       check=True)


# Build outputs (build/, the egg-info) go to a directory of their own under the system's
# temporary directory, one per source tree (reused by its next build), not into the source tree
# pip is given.
HERE = pathlib.Path(__file__).resolve().parent
OUT = pathlib.Path(tempfile.gettempdir()) / (
    "perceptrond-build-" + hashlib.sha256(str(HERE).encode()).hexdigest()[:16])
OUT.mkdir(parents=True, exist_ok=True)

setup(cmdclass={"build_py": BuildPyWithStubs},
      options={"build": {"build_base": str(OUT / "build")},
               "egg_info": {"egg_base": str(OUT)}})
