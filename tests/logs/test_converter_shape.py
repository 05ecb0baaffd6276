"""CKPT083 (engine check logs.converter_shape_refused): a shape refusal raised under a checkpoint converter's traceback
frame (CKPT081: Pai-Megatron-Patch's model_checkpoints_convertor, hf2mcore / mcore2hf scripts, Megatron-LM's
tools/checkpoint, convert_weight.py, …) is the converter's — the same line without the frame keeps NUM098 / PAR010."""

from __future__ import annotations

from tests.logs.conftest import paste_report

# Pai-Megatron-Patch #167 (real lines): hf2mcore_1.5_v2.py at TP 2
FRAME = ('File "/ossfs/workspace/megatron-moe/Pai-Megatron-Patch-0408-train/toolkits/model_checkpoints_convertor/qwen/'
         'hf2mcore_1.5_v2.py", line 461, in save_mgmodel\n'
         "    viewed = v.view(args.num_query_groups, -1, head_dim, args.hidden_size)\n")
REFUSAL = "RuntimeError: shape '[32, -1, 128, 4096]' is invalid for input of size 12288\n"
# Pai-Megatron-Patch #544 (real lines): the same under torchrun's rank prefix
RANKED = ('[rank0]:   File "/workspac/code/DPSK/Pai-Megatron-Patch/toolkits/model_checkpoints_convertor/deepseek/'
          'hf2mcore_deepseek_v3_moe.py", line 265, in load_megatron_model\n'
          "[rank0]:     viewed = [x.view(2, -1, args.hidden_size) for x in v]\n"
          "[rank0]: RuntimeError: shape '[2, -1, 7168]' is invalid for input of size 7168\n")


def test_refusal_under_a_converter_frame_is_the_converters(tmp_path):
    out = paste_report(tmp_path, FRAME + REFUSAL)
    rc = out["root_cause"]
    assert rc["rule"] == "CKPT083"
    assert "12288" in rc["message"] and "hf2mcore_1.5_v2.py" in rc["message"]


def test_refusal_under_a_ranked_converter_frame(tmp_path):
    out = paste_report(tmp_path, RANKED)
    assert out["root_cause"]["rule"] == "CKPT083"
    assert "7168" in out["root_cause"]["message"]


def test_refusal_without_a_converter_keeps_its_rule(tmp_path):
    out = paste_report(tmp_path, REFUSAL)
    assert out["root_cause"]["rule"] == "NUM098"
    assert not any(f["rule"] == "CKPT083" for f in out.get("findings") or [])


def test_refusal_before_the_frame_is_not_the_converters(tmp_path):
    # an error printed before the converter ran (the frame's traceback comes after it) is not raised under it
    out = paste_report(tmp_path, REFUSAL + FRAME)
    assert not any(f["rule"] == "CKPT083" for f in out.get("findings") or [])
