"""Generates the gRPC stubs when they are missing or older than the proto, then builds as
pyproject.toml says.

`pip install ./client/python` from a checkout that was never built with CMake still gets stubs:
they are generated from ../../proto by generate_stubs.py (which needs protoc and
grpc_python_plugin: Debian's protobuf-compiler and protobuf-compiler-grpc). This runs before
setup() because every step of the build, the metadata first, needs the fusetune._proto package.
"""
import os
import subprocess
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


def stubs_are_stale():
    stub = os.path.join(HERE, "fusetune", "_proto", "fusetune_pb2_grpc.py")
    proto = os.path.join(HERE, "..", "..", "proto", "fusetune.proto")
    if not os.path.exists(stub):
        return True
    return os.path.exists(proto) and os.path.getmtime(proto) > os.path.getmtime(stub)


if stubs_are_stale():
    subprocess.run([sys.executable, os.path.join(HERE, "generate_stubs.py")], check=True)
setup()
