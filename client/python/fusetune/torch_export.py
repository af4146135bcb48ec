"""PyTorch modules as ONNX bytes, in memory, for Client.tune_module().

PyTorch is optional: only this module imports it, and only when called.
"""
import io

__all__ = ["module_to_onnx"]

# The newest opset the server's importer takes (ir/onnx/onnx_import.h kMaxOnnxOpset); torch's own
# default is used when it is older.
MAX_OPSET = 18


def module_to_onnx(module, example_inputs, opset=None, export_options=None):
    """The serialised ONNX model of `module` traced with `example_inputs` (a tensor or a tuple
    of tensors), exported in eval mode without gradients. export_options go to
    torch.onnx.export (input_names, ...)."""
    try:
        import torch
    except ImportError:
        raise ImportError("tune_module needs PyTorch (Debian: python3-torch)") from None
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module: expected a torch.nn.Module, got {type(module).__name__}")
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    kwargs = dict(export_options or {})
    if opset is not None:
        kwargs["opset_version"] = opset
    buffer = io.BytesIO()
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            torch.onnx.export(module, args, buffer, **kwargs)
    finally:
        module.train(was_training)
    return buffer.getvalue()
