"""ENV336 (engine check logs.install_check_failed): an error raised while the framework's own install check ran
(ENV334: `paddle.utils.run_check()`, `Running verify PaddlePaddle program ...`) and before it said it passed (ENV335)
is the install's, whatever rule reads the message; an ENV or MEM rule keeps its reading, and an error after the
pass line is the user's own program's."""

from __future__ import annotations

from tests.logs.conftest import paste_report

# Paddle #71882 (real lines): the check on an Atlas 300I Duo, the backward op raises in the verification program
START = 'python -c "import paddle; paddle.utils.run_check()"\n\n'
BANNER = ("Running verify PaddlePaddle program ... \n"
          "I0325 10:26:10.864704   449 pir_interpreter.cc:1480] New Executor is Running ...\n"
          "I0325 10:26:10.867235   449 pir_interpreter.cc:1506] pir interpreter is running by multi-thread mode ...\n")
SUM_GRAD = ("W0325 10:26:12.564280   639 pir_interpreter.cc:1980] Instruction OP id: 7, Ir OP id: 66, pd_op.sum_grad "
            "raises an EnforceNotMet exception common::enforce::EnforceNotMet\n")
PASSED = "PaddlePaddle is installed successfully! Let's start deep learning with PaddlePaddle now.\n"
# MindSpore #253 (real lines): the check passes, the process then fails to create a stream
MS_START = ("(mindspore_py37) ***:~/mindyolo$ python -c \"import mindspore;mindspore.set_context(device_target='GPU');"
            "mindspore.run_check()\"\nMindSpore version:  2.1.0\n")
MS_PASSED = ("The result of multiplication calculation is correct, MindSpore has been installed on platform [GPU] "
             "successfully!\n")
MS_OOM = "The cudaStreamCreateWithFlags failed, ret[2], out of memory\n"


def test_error_inside_the_check_is_the_install(tmp_path):
    out = paste_report(tmp_path, START + BANNER + SUM_GRAD)
    assert out["root_cause"]["rule"] == "ENV336"
    assert "pd_op.sum_grad" in out["root_cause"]["message"] and "NUM065" in out["root_cause"]["message"]


def test_error_after_the_pass_line_keeps_its_rule(tmp_path):
    out = paste_report(tmp_path, START + BANNER + PASSED + SUM_GRAD)
    assert out["root_cause"]["rule"] == "NUM065"
    assert not any(f["rule"] == "ENV336" for f in out.get("findings") or [])


def test_without_the_check_the_error_keeps_its_rule(tmp_path):
    assert paste_report(tmp_path, SUM_GRAD)["root_cause"]["rule"] == "NUM065"


def test_user_words_that_the_check_failed(tmp_path):
    # Paddle #61913's title (real): the user's sentence names the check and its error
    out = paste_report(tmp_path, "编译Paddle或者pip安装，run_check时都报错：CUBLAS error(7)\n")
    assert out["root_cause"]["rule"] == "ENV336"
    assert "CUBLAS error(7)" in out["root_cause"]["message"]


def test_user_words_that_the_check_passed_are_no_failure(tmp_path):
    # Paddle #60925's title (real): the check passed, inference failed
    out = paste_report(tmp_path, "使用Paddle-GPU推理出现问题，paddle.utils.run_check()通过\n")
    assert not any(f["rule"] in ("ENV334", "ENV336") for f in out.get("findings") or [])


def test_memory_error_inside_the_check_keeps_its_rule(tmp_path):
    out = paste_report(tmp_path, MS_START + MS_OOM)
    assert out["root_cause"]["rule"].startswith("MEM")
    assert not any(f["rule"] == "ENV336" for f in out.get("findings") or [])


def test_mindspore_error_after_its_pass_line_is_the_programs(tmp_path):
    out = paste_report(tmp_path, MS_START + MS_PASSED + MS_OOM)
    assert out["root_cause"]["rule"].startswith("MEM")


def test_error_far_after_the_check_is_not_read_with_it(tmp_path):
    filler = "".join(f"I0325 10:26:10.86470{i % 10}   449 pir_interpreter.cc:1480] New Executor is Running ...\n"
                     for i in range(90))
    out = paste_report(tmp_path, START + BANNER + filler + SUM_GRAD)
    assert out["root_cause"]["rule"] == "NUM065"
