"""The generated protobuf and gRPC modules, with a clear message when they were never generated.

They live in fusetune/_proto/, written by client/python/generate_stubs.py (run by the CMake build
and by `pip install`); see that script for why the import path is fusetune._proto.
"""
try:
    from fusetune._proto import fusetune_pb2 as pb
    from fusetune._proto import fusetune_pb2_grpc as pb_grpc
except ImportError as e:  # pragma: no cover - depends on the checkout's state
    raise ImportError(
        "fusetune's gRPC stubs are missing: build the checkout (scripts/setup.sh or "
        "`ninja -C build python_stubs`) or run `python3 client/python/generate_stubs.py`; "
        f"({e})") from e

__all__ = ["pb", "pb_grpc"]
