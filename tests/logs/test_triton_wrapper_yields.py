"""Triton's front-end wrapper yields to the exception it prints when a rule reads that exception.

Triton's code generator wraps whatever stops it in `triton.compiler.errors.CompilationError: at L:C:`, prints the
kernel source up to the offending line and then the original exception. NUM045 reads the wrapper (and the extern
math dtype KeyError under it); when the exception under it is one another rule knows, that rule says what failed:
the Ascend back end declaring no fp8 types (`'NPUOptions' object has no attribute 'supported_fp8_dtypes'`, ENV139,
a developer's Triton-Ascend porting notes, hongziqi/sglang-test). The wrapper alone still heads."""

from __future__ import annotations

from tests.logs.conftest import paste_root_cause as _root

_WRAPPED = """\
  File "/home/coder/miniconda/envs/triton/lib/python3.10/site-packages/triton/compiler/compiler.py", line 102, in make_ir
    return ast_to_ttir(self.fn, self, context=context, options=options, codegen_fns=codegen_fns,
triton.compiler.errors.CompilationError: at 1:0:
def _per_token_group_quant_8bit(
^
AttributeError("'NPUOptions' object has no attribute 'supported_fp8_dtypes'")
[ERROR] 2025-07-16-09:10:29 (PID:214287, Device:0, RankID:-1) ERR99999 UNKNOWN applicaiton exception
"""


def test_fp8_options_under_the_wrapper_head(tmp_path):
    assert _root(tmp_path, _WRAPPED)["rule"] == "ENV139"


def test_wrapper_alone_heads(tmp_path):
    text = _WRAPPED.replace("AttributeError(\"'NPUOptions' object has no attribute 'supported_fp8_dtypes'\")",
                            "NameError(\"name 'tl_extra' is not defined\")")
    assert _root(tmp_path, text)["rule"] == "NUM045"
