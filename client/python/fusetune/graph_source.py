"""Turning what a user hands to tune()/query() into the wire's GraphSource.

Accepted: a path (str or os.PathLike) to a .relay or .onnx file, Relay text, the bytes of an ONNX
model, or an onnx.ModelProto. Nothing is parsed here: Relay text and ONNX bytes go to the server as
they are, so the server's parser and importer (the command line's too) decide what is valid and
answer with positions.
"""
import os

from fusetune._wire import pb

__all__ = ["graph_source"]




def _read_path(path):
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".onnx"):
        return pb.GraphSource(onnx_model=data, name=path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 Relay text (byte {e.start}); ONNX models need the "
                         ".onnx extension") from None
    return pb.GraphSource(relay_text=text, name=path)


def graph_source(graph, name=None):
    """The GraphSource for `graph`; `name` overrides the name reports show (default: the path,
    else "graph")."""
    if isinstance(graph, os.PathLike):
        source = _read_path(graph)
    elif isinstance(graph, str):
        # A path has no newline; every Relay function has a "(" that a path rarely has, so an
        # existing file wins over it.
        if "\n" not in graph and os.path.exists(graph):
            source = _read_path(graph)
        elif "\n" in graph or "(" in graph:
            source = pb.GraphSource(relay_text=graph)
        elif graph.endswith((".relay", ".onnx")):
            source = _read_path(graph)  # FileNotFoundError names it
        else:
            raise ValueError(f"graph: '{graph}' is neither a file nor Relay text")
    elif isinstance(graph, (bytes, bytearray, memoryview)):
        source = pb.GraphSource(onnx_model=bytes(graph))
    elif hasattr(graph, "SerializeToString") and hasattr(graph, "opset_import"):
        source = pb.GraphSource(onnx_model=graph.SerializeToString())  # an onnx.ModelProto
    else:
        raise TypeError("graph: expected a path, Relay text, ONNX bytes or an onnx.ModelProto, "
                        f"got {type(graph).__name__}")
    if name is not None:
        source.name = str(name)
    return source


def display_name(source):
    """What reports call the graph: its name, else "graph" as the server says."""
    return source.name or "graph"
