"""Find and read a model's config.json: embedded name, Hugging Face repo id, file or directory.

Resolution order for a model reference:
1. an existing path: a `config.json` file, or a directory containing one;
2. an embedded name (`glm-5.3-flash`) or the repo id of an embedded model
   (`zai-org/GLM-5.3-Flash`); a local Hugging Face cache snapshot of that repo id wins when
   present, so a user's real checkpoint config is preferred over our copy;
3. a repo id found only in the local Hugging Face cache.

>>> load_model("glm-5.3-flash").num_full_layers
11
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kvledger.core.limits import MAX_CONFIG_BYTES, MAX_JSON_DEPTH, json_depth_ok
from kvledger.model.arch import ModelArch, ModelError
from kvledger.model.families import ADAPTERS
from kvledger.model.reader import ConfigReader

CONFIG_DIR = Path(__file__).parent / "configs"
DEFAULT_MODEL = "glm-5.3-flash"

# Embedded name → Hugging Face repo id.
REPO_IDS: dict[str, str] = {
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-v3.2": "deepseek-ai/DeepSeek-V3.2",
    "falcon-h1-0.5b": "tiiuae/Falcon-H1-0.5B-Instruct",
    "glm-5.2": "zai-org/GLM-5.2",
    "glm-5.3-flash": "zai-org/GLM-5.3-Flash",
    "jamba-1.5-mini": "ai21labs/AI21-Jamba-1.5-Mini",
    "kimi-linear-48b-a3b-instruct": "moonshotai/Kimi-Linear-48B-A3B-Instruct",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B",
    "nemotron-h-56b-base-8k": "nvidia/Nemotron-H-56B-Base-8K",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-next-80b-a3b-instruct": "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "qwen3.5-35b-a3b": "Qwen/Qwen3.5-35B-A3B",
}


def embedded_names() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def _hf_cache_snapshot(repo_id: str) -> Path | None:
    """config.json of the snapshot `refs/main` points at, else of the newest snapshot."""
    hub = Path(
        os.environ.get("HF_HUB_CACHE")
        or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    )
    repo_dir = hub / f"models--{repo_id.replace('/', '--')}"
    main_ref = repo_dir / "refs" / "main"
    if main_ref.is_file():
        pinned = repo_dir / "snapshots" / main_ref.read_text().strip() / "config.json"
        if pinned.is_file():
            return pinned
    found = sorted((repo_dir / "snapshots").glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def resolve_config_path(ref: str) -> Path:
    path = Path(ref).expanduser()
    try:
        path.stat()
    except FileNotFoundError:
        pass
    except OSError as exc:  # a name too long for the file system, a loop of links
        raise ModelError(f"model {ref!r}: not a path that can be read ({exc.strerror})") from None
    if path.is_dir():
        candidate = path / "config.json"
        if not candidate.is_file():
            raise ModelError(f"{path}: directory has no config.json")
        return candidate
    if path.is_file():
        return path
    by_repo = {repo.lower(): name for name, repo in REPO_IDS.items()}
    name = ref.lower() if ref.lower() in REPO_IDS else by_repo.get(ref.lower())
    repo_id = REPO_IDS.get(name, ref) if name else ref
    if "/" in repo_id and (snapshot := _hf_cache_snapshot(repo_id)):
        return snapshot
    if name:
        return CONFIG_DIR / f"{name}.json"
    raise ModelError(
        f"model {ref!r}: not a file, a directory with config.json, an embedded model "
        f"({', '.join(embedded_names())}) or a repo id in the local Hugging Face cache"
    )


def read_config(path: Path) -> ConfigReader:
    """The config's JSON object; errors name the file (size, encoding, nesting, syntax)."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ModelError(f"{path}: {size:,} bytes is not a model config (at most "
                             f"{MAX_CONFIG_BYTES:,})")
        text = path.read_bytes().decode("utf-8")
        if not json_depth_ok(text):
            raise ModelError(f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
        data = json.loads(text)
    except ModelError:
        raise
    except json.JSONDecodeError as exc:
        raise ModelError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except RecursionError:
        raise ModelError(f"{path}: JSON nested too deeply") from None
    except OSError as exc:
        raise ModelError(f"{path}: cannot be read ({exc.strerror})") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise ModelError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object at the top level")
    return ConfigReader(data, str(path))


def load_model(ref: str = DEFAULT_MODEL, *, family: str | None = None) -> ModelArch:
    """Read the model a reference names; errors name the file and the field.

    `family` (--family) reads the config with that family's adapter whatever its
    `model_type` says: a renamed fine-tune of a supported architecture.
    """
    if family is not None and family not in ADAPTERS:
        raise ModelError(f"--family {family!r}: expected one of {', '.join(sorted(ADAPTERS))}")
    reader = read_config(resolve_config_path(ref))
    model_type = reader.str("model_type")
    adapter = ADAPTERS.get(family or model_type)
    if adapter is None:
        raise reader.error(
            "model_type", f"is {model_type!r} (expected one of {', '.join(sorted(ADAPTERS))}; "
            "--family NAME reads a renamed fine-tune with one of them)"
        )
    return adapter(reader, ref)
