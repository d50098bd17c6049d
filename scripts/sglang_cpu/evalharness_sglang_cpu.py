"""Import fixes for SGLang 0.5.23 on a CPU-only machine, loaded at interpreter start by evalharness_sglang_cpu.pth.

Owns one thing: making `import torchvision` work in the SGLang engine environment (.engine/sglang/venv) without
touching SGLang's or torchvision's files. PyPI's torchvision 0.28.0 (the one for torch 2.13) is a CUDA build: its _C
extension does not load on a CPU torch, and its _meta_registrations.py then calls register_fake("torchvision::nms")
and ("torchvision::qnms") on operators that were never defined -> "operator torchvision::nms does not exist".
SGLang imports torchvision at module level (srt/multimodal/internvl_utils.py), so the server cannot start.
The fix: define those two schemas (the ones torchvision's C++ defines) just before torchvision is first imported.
Costs nothing for processes that never import torchvision. Imports nothing from evalharness.
"""
import importlib.abc
import sys

_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_keep = []  # the Library object must stay alive for the definitions to stay


class _DefineTorchvisionOps(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        import torch

        if not hasattr(torch.ops, "torchvision") or not hasattr(torch.ops.torchvision, "nms"):
            try:
                lib = torch.library.Library("torchvision", "FRAGMENT")
                for schema in _SCHEMAS:
                    lib.define(schema)
                _keep.append(lib)
            except RuntimeError:  # already defined (a torchvision whose _C loads): nothing to fix
                pass
        return None  # let the normal finders import torchvision


sys.meta_path.insert(0, _DefineTorchvisionOps())
