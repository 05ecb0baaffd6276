"""MindIE's error codes as data (msdoctor/data/mindie_codes.toml, from the MindIE error-code reference's field tables):
`MIE` + component + level + the component's 6-character code is decoded (component, sub-component, phase, error type)
and named in a finding's description; it routes no area."""

from __future__ import annotations

import pytest

from msdoctor.engine.codes import mindie_code, mindie_code_in
from tests.logs.conftest import paste_root_cause as _headline


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("MIE04E02041C", "MindIE Server error: endpoint, phase single-node inference, initialization exception"),
        ("MIE04E120407", "MindIE Server error: backend_model, phase single-node inference, check failed"),
        ("MIE04W01011A", "MindIE Server warning: daemon, phase service start-up, subprocess exit alarm"),
        ("MIE05E030001", "MindIE LLM error: BACKEND, llmmanager initialization failed"),
        ("MIE05E040001", "MindIE LLM error: LLM_MANAGER, LLMInferModels initialization failed"),
        ("MIE03E400002", "MindIE MS (Motor) error: ms-common (httpServer …), INVALID_PARAMETER (an internal parameter "
                         "check failed)"),
        ("MIE07E000001", "MindIE RT error"),
    ],
)
def test_decoded(code, said):
    assert mindie_code(code) == said


@pytest.mark.parametrize("code", ["MIE09E000001", "MIE04X02041C", "MIE04E02041", "EI0006"])
def test_not_a_mindie_code(code):
    assert mindie_code(code) is None


def test_found_in_a_line():
    line = ("[2025-12-15 15:19:22.681+08:00] [38] [452] [server] [ERROR] [http_server.cpp:163] : [MIE04E02041C] "
            "[endpoint] Failed to listen 172.17.0.3:40032, please check if business ip and port are legal.")
    assert mindie_code_in(line)[0] == "MIE04E02041C"
    assert mindie_code_in("XMIE04E02041C1") is None


def test_named_in_the_finding(tmp_path):
    text = ("[2025-03-10 20:26:36.604+08:00] [324] [325] [mindie-server] [ERROR] [share_memory.cpp:172] : [MIE04E120407] "
            "[model_backend] Shared memory available is not enough on the filesystem.\n")
    rc = _headline(tmp_path, text)
    assert "MIE04E120407 = MindIE Server error: backend_model" in rc["message"]
