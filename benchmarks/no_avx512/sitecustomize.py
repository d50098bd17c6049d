"""Make this machine's engine behave as on a processor without AVX-512 (and so without native bf16), for timing the
demo where such a processor is not at hand (benchmarks/no_avx512/README.md).

Put this folder first on the engine's PYTHONPATH together with the ISA limits of benchmarks/no_avx512/env.sh.
vLLM's CPU build picks its kernels library by asking torch (vllm/platforms/cpu.py, import_kernels: `_C` with
AVX-512 bf16, `_C_AVX512`, or `_C_AVX2`), so torch's answers are changed here; torch's own kernels and oneDNN's and
MKL's are limited by the environment variables. Imports nothing when torch is absent (the harness's environment).
"""

import importlib.util

if importlib.util.find_spec("torch") is not None:
    import torch

    torch.cpu._is_avx512_supported = lambda: False
    torch.cpu._is_avx512_bf16_supported = lambda: False
    torch.cpu._is_amx_fp16_supported = lambda: False
    torch.cpu._is_amx_tile_supported = lambda: False
