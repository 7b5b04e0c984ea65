"""Resolving a model reference to a config.json, and the errors for configs we cannot read."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kvledger.model.arch import Family, ModelError
from kvledger.model.config import CONFIG_DIR, REPO_IDS, embedded_names, load_model


def test_every_embedded_config_has_a_repo_id_and_loads():
    assert embedded_names() == sorted(REPO_IDS)
    for name in embedded_names():
        assert load_model(name).source == str(CONFIG_DIR / f"{name}.json")


def test_embedded_name_and_repo_id_resolve_to_the_embedded_copy():
    by_name = load_model("glm-5.3-flash")
    by_repo = load_model("zai-org/GLM-5.3-Flash")
    assert by_name.source == by_repo.source == str(CONFIG_DIR / "glm-5.3-flash.json")
    assert by_repo.name == "zai-org/GLM-5.3-Flash"  # the reference the user gave
    assert load_model("ZAI-ORG/glm-5.3-flash").family is Family.GLM5_NEXT


def test_path_to_a_file_and_to_a_directory(tmp_path: Path, embedded):
    model_dir = tmp_path / "my-llama"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(embedded("llama-3.1-8b")))
    other_name = tmp_path / "llama.json"
    other_name.write_text(json.dumps(embedded("llama-3.1-8b")))
    assert load_model(str(model_dir)).source == str(model_dir / "config.json")
    assert load_model(str(other_name)).source == str(other_name)
    assert load_model(str(other_name)).num_full_layers == 32


def _snapshot(hub: Path, repo_id: str, commit: str, data: dict) -> Path:
    path = hub / f"models--{repo_id.replace('/', '--')}" / "snapshots" / commit / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    return path


def test_hf_cache_snapshot_wins_over_the_embedded_copy(hf_hub: Path, embedded):
    data = embedded("glm-5.3-flash")
    data["text_config"]["num_nextn_predict_layers"] = 3  # tell the copies apart
    path = _snapshot(hf_hub, "zai-org/GLM-5.3-Flash", "0123abc", data)
    for ref in ("zai-org/GLM-5.3-Flash", "glm-5.3-flash"):
        arch = load_model(ref)
        assert arch.source == str(path)
        assert arch.num_draft_layers == 3


def test_hf_cache_follows_refs_main_over_a_newer_snapshot(hf_hub: Path, embedded):
    pinned = _snapshot(hf_hub, "acme/tiny-llama", "aaa", embedded("llama-3.1-8b"))
    newer = _snapshot(hf_hub, "acme/tiny-llama", "bbb", embedded("qwen3-32b"))
    os.utime(newer, (pinned.stat().st_mtime + 60,) * 2)
    assert load_model("acme/tiny-llama").source == str(newer)  # no ref: the newest
    (hf_hub / "models--acme--tiny-llama" / "refs").mkdir()
    (hf_hub / "models--acme--tiny-llama" / "refs" / "main").write_text("aaa\n")
    assert load_model("acme/tiny-llama").source == str(pinned)


def test_unknown_reference_lists_what_would_have_worked():
    with pytest.raises(ModelError, match=r"'acme/nothing': not a file.*glm-5\.3-flash"):
        load_model("acme/nothing")


def test_directory_without_config(tmp_path: Path):
    with pytest.raises(ModelError, match=re.escape(f"{tmp_path}: directory has no config.json")):
        load_model(str(tmp_path))


def test_malformed_json_names_the_file_and_position(tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama",\n "num_hidden_layers": }')
    with pytest.raises(
        ModelError, match=re.escape(f"{path}: not valid JSON (line 2, column 23: Expecting value)")
    ):
        load_model(str(path))


def test_top_level_must_be_an_object(tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    with pytest.raises(ModelError, match=re.escape(f"{path}: expected a JSON object")):
        load_model(str(path))


def test_unknown_model_type_lists_the_supported_ones(load_dict, tmp_path: Path):
    with pytest.raises(ModelError) as err:
        load_dict({"model_type": "gpt_fancy"})
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'config.json'}: field 'model_type' is 'gpt_fancy'")
    for model_type in ("glm5_next", "kimi_linear", "qwen3_5_moe", "nemotron_h", "falcon_h1"):
        assert model_type in message


def test_missing_field_names_file_and_field(load_dict, embedded, tmp_path: Path):
    data = embedded("llama-3.1-8b")
    del data["num_hidden_layers"]
    with pytest.raises(ModelError) as err:
        load_dict(data)
    assert str(err.value) == (
        f"{tmp_path / 'config.json'}: field 'num_hidden_layers' is missing (expected an integer)"
    )


def test_wrong_type_names_field_and_value(load_dict, embedded):
    data = embedded("glm-5.3-flash")
    data["text_config"]["linear_attn_config"]["num_heads"] = "64"
    with pytest.raises(
        ModelError,
        match=r"field 'text_config\.linear_attn_config\.num_heads' is '64' \(expected an integer\)",
    ):
        load_dict(data)


def test_nested_section_of_the_wrong_type(load_dict, embedded):
    data = embedded("kimi-linear-48b-a3b-instruct")
    data["linear_attn_config"] = [1, 2]
    with pytest.raises(
        ModelError, match=r"field 'linear_attn_config' is list \(expected an object\)"
    ):
        load_dict(data)


def test_rope_factor_must_be_positive(load_dict, embedded):
    # A negative factor once made the context length negative and the plan silently wrong.
    data = embedded("llama-3.1-8b")
    data["rope_scaling"] = {"rope_type": "linear", "factor": -1.0}
    with pytest.raises(ModelError, match=r"field 'rope_scaling\.factor' is -1 \(expected a positive"):
        load_dict(data)


def test_family_reads_a_renamed_fine_tune(tmp_path):
    # An unknown model_type stays an error that lists the families and names --family ...
    import json

    from kvledger.model.config import CONFIG_DIR

    data = json.loads((CONFIG_DIR / "kimi-linear-48b-a3b-instruct.json").read_text())
    data["model_type"] = "my_kimi_finetune"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match=r"is 'my_kimi_finetune' \(expected one of "
                       r"deepseek_v3, .*--family NAME"):
        load_model(str(path))
    # ... and --family kimi_linear reads it exactly as the original.
    renamed = load_model(str(path), family="kimi_linear")
    original = load_model("kimi-linear-48b-a3b-instruct")
    assert renamed.layers == original.layers and renamed.state == original.state
    assert renamed.params == original.params
    with pytest.raises(ModelError, match="--family 'bamba': expected one of deepseek_v3"):
        load_model(str(path), family="bamba")
