"""Import-only stand-in for sgl_kernel in the SGLang CPU engine environment (.engine/sglang/venv).

With --device cpu, SGLang 0.5.23 imports CPU kernels from sgl_kernel at module level (for example
kernels/ops/kvcache/cache_move.py: `from sgl_kernel import copy_all_layer_kv_cache_cpu`). The wheel on PyPI
(sglang-kernel) is CUDA only, and plain serving of a dense model never calls these kernels (measured: a recording
module logged the imports and zero calls over a full run), so names that raise when called are enough. A call means
a path this environment cannot serve; it fails loudly with the kernel's name.
"""

_NAMES = (
    "assign_draft_cache_locs_contiguous_cpu",
    "assign_extend_cache_locs_cpu",
    "assign_req_to_token_pool_cpu",
    "build_draft_decode_metadata_cpu",
    "build_tree_kernel_efficient_cpu",
    "copy_all_layer_kv_cache_cpu",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "rotate_input_ids_cpu",
    "sgl_build_tree_kernel_efficient_cpu",
    "sgl_verify_tree_greedy_cpu",
    "verify_tree_greedy_cpu",
)


def _missing(name):
    def kernel(*args, **kwargs):
        raise NotImplementedError(
            f"sgl_kernel.{name}: the SGLang CPU kernels are not built in this environment (import-only stand-in)"
        )

    kernel.__name__ = name
    return kernel


for _name in _NAMES:
    globals()[_name] = _missing(_name)
