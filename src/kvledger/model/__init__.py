"""Model config → architecture. Pure Python; never imports torch.

Files:
- `config.py`: find and read a config.json (embedded name, Hugging Face repo id, file, directory);
- `reader.py`: `ConfigReader`, typed field access whose errors name the file and the field;
- `families/`: one reader per model family (GLM-5.x, DeepSeek, Kimi, Qwen, Nemotron-H, …);
- `arch.py`: `ModelArch`, what a config says about the cache, independent of any deployment;
- `context.py`: the context length a config allows, derived as SGLang derives it;
- `weights.py`, `params.py`: parameter counts per block and per part of the network;
- `quant.py`: checkpoint quantization and the bytes each part stores;
- `compute.py`: FLOPs and weight bytes per token (the simulator's roofline).
"""
