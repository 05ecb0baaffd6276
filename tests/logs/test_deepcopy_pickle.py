"""PAR090 (engine check logs.deepcopy_pickle_refused): CKPT092's refusal to pickle a live process group raised under
copy.py's deepcopy frames (PAR089) is a deep copy of the wrapped model — an EMA of a DDP / MoE model — not a save;
the same line under torch/serialization.py's frames, or alone, keeps CKPT092."""

from __future__ import annotations

from tests.logs.conftest import paste_report

# microsoft/Tutel #177 (real lines: tests/realworld/logs/tutel-177-moe-model-ema-deepcopy-cannot-pickle-processgroupnccl-2022)
COPY = ('  File "/opt/conda/lib/python3.8/copy.py", line 172, in deepcopy\n'
        "    y = _reconstruct(x, memo, *rv)\n"
        '  File "/opt/conda/lib/python3.8/copy.py", line 230, in _deepcopy_dict\n'
        "    y[deepcopy(key, memo)] = deepcopy(value, memo)\n"
        '  File "/opt/conda/lib/python3.8/copy.py", line 161, in deepcopy\n'
        "    rv = reductor(4)\n")
REFUSAL = "TypeError: cannot pickle 'torch._C._distributed_c10d.ProcessGroupNCCL' object\n"
SAVE = ('  File "/usr/local/lib/python3.8/dist-packages/torch/serialization.py", line 423, in save\n'
        "    _save(obj, opened_zipfile, pickle_module, pickle_protocol)\n")


def test_refusal_under_deepcopy_is_a_copy_of_the_wrapped_model(tmp_path):
    rc = paste_report(tmp_path, COPY + REFUSAL)["root_cause"]
    assert rc["rule"] == "PAR090"
    assert "ProcessGroupNCCL" in rc["message"] and "model.module" in rc["message"]


def test_refusal_under_torch_save_keeps_ckpt092(tmp_path):
    out = paste_report(tmp_path, SAVE + COPY + REFUSAL)  # torch.save's frames in the file: a save, whatever it copied
    assert out["root_cause"]["rule"] == "CKPT092"
    assert not any(f["rule"] == "PAR090" for f in out.get("findings") or [])


def test_refusal_alone_keeps_ckpt092(tmp_path):
    assert paste_report(tmp_path, REFUSAL)["root_cause"]["rule"] == "CKPT092"
