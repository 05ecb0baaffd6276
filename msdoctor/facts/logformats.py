"""Log line grammars of a distributed MindSpore job (shared/faults.md §4) and where a file's rank comes from.

Pure functions over text: no file access, no judgement. ``parse_line`` turns one line into a
:class:`LogRecord` (time, level, module, source location, message); ``split_banner`` cuts a MindSpore
exception text into its ``- Section:`` parts; ``rank_from_path`` / ``rank_hints`` say which rank a file
belongs to.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from pathlib import PurePath

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "EXCEPTION", "EVENT", "TRACE")
ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "EXCEPTION"})

# MindSpore C++ (`[LEVEL] MOD(pid,tid,pname):ts [file:line] Func] msg`) and Python
# (`[LEVEL] ME(pid:tid,pname):ts [file:line] msg`) share one grammar (faults.md §4.2).
MINDSPORE_RE = re.compile(
    r"^\[(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL|EXCEPTION)\] ?(?P<module>[A-Z_]+)"
    r"\((?P<pid>\d+)[,:](?P<tid>[0-9a-fx]+),(?P<pname>[^)]*)\):"
    r"(?P<ts>\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}[.:]\d{3}\.\d{3})\s*"
    r"\[(?P<src>[^\]]+?):(?P<line>\d+)\](?: (?P<func>\w+)\])? ?(?P<msg>.*)$"
)
# CANN plog / device log: `[LEVEL] MOD(pid,pname):ts [file:line]msg`; HCCL adds `[tag][rank]` blocks,
# RUNTIME a thread id, HCCP `tid:N,func(line) :`, newer CANN drops the space before the module (§4.1).
PLOG_RE = re.compile(
    r"^\[(?P<level>ERROR|WARNING|INFO|DEBUG|EVENT|TRACE)\]\s?(?P<module>[A-Z_]+)"
    r"\((?P<pid>\d+),(?P<pname>[^)]*)\):(?P<ts>\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}[.:]\d{3}\.\d{3})\s*(?P<rest>.*)$"
)
PLOG_SRC_RE = re.compile(r"\[(?P<src>[\w./-]+\.(?:cc|cpp|c|h|hpp|py)):(?P<line>\d+)\]")
# torch_npu style prefix seen next to the same CANN codes (§4.2).
TORCH_NPU_RE = re.compile(
    r"^\[(?P<level>ERROR|WARNING|INFO|DEBUG)\] (?P<ts>\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}) "
    r"\(PID:(?P<pid>\d+), Device:(?P<device>-?\d+), RankID:(?P<rank>-?\d+)\) (?P<msg>.*)$"
)
# Python logging as mindformers configures it: `2024-01-01 10:00:00,000 - mindformers[x] - INFO - msg`.
PYLOG_RE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(?P<ms>\d{3}) - (?P<module>[\w.:\[\]/-]+) - "
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) - (?P<msg>.*)$"
)
# `KeyError: 'x'`, `pyarrow.lib.ArrowInvalid: …` (a dotted class named …Invalid / …Failure), a bare
# `AssertionError` on a line of its own (an assert without a message), and the base classes themselves
# (`Exception: Error loading data from …`, raised by model-zoo code as `raise Exception(…)`), and the standard
# library's lower-case classes (`socket.gaierror: [Errno -2] Name or service not known`, `socket.timeout: …`).
# Ray re-raises a task's exception as `ray.exceptions.RayTaskError(OutOfMemoryError): ray::Task.run() …`: the
# wrapped class in parentheses is part of the type (it names the fault; the wrapper only says "in a Ray task").
# ONNX Runtime's Python exceptions are named by status, not …Error (`onnxruntime.capi.onnxruntime_pybind11_state.
# InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions …`, `Fail: [ONNXRuntimeError] : 1 :
# FAIL : …`, `NoSuchFile`, `InvalidGraph`, `NotImplemented`, `EPFail`): read where ORT's status tag follows the name.
PY_EXC_RE = re.compile(r"^(?P<type>(?:[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)|(?:Error|Exception)(?=:)|[A-Za-z_]\w*\.[\w.]*(?:Invalid|Failure)"
                       r"|(?:[A-Za-z_][\w.]*\.)?(?:InvalidArgument|Fail|NoSuchFile|NoModel|InvalidGraph|InvalidProtobuf|"
                       r"NotImplemented|EPFail|ModelLoaded|ModelLoadCanceled|ModelRequiresCompilation)(?=: \[ONNXRuntimeError\])"
                       r"|[a-z_]\w*\.(?:[a-z]{0,20}error|timeout)(?=: ))"
                       r"(?:\([A-Za-z_][\w.]{0,80}\))?)"
                       r"(?:: ?(?P<msg>.*)|\s*)$")
# ... and IPython's / Jupyter's header, which names the exception first (`ModuleNotFoundError      Traceback (most
# recent call last)`): a notebook paste cut before its exception line still says what was raised (rfdiffusion#209)
# ... and rich's box around its frames (`╭──── Traceback (most recent call last) ────╮`; `┌─…─┐` in older rich or a
# console without rounded corners), whose frame lines are `│ /x/train.py:746 in <module>   │` (RICH_FRAME_RE)
TRACEBACK_RE = re.compile(r"^(?:Traceback \(most recent call last\):|(?P<ipy>[A-Za-z_][\w.]{0,80}(?:Error|Exception|"
                          r"Interrupt|Exit))\s{2,}Traceback \(most recent call last\)\s*$|"
                          r"[╭┌]─{2,} Traceback \(most recent call last\) ─{2,}[╮┐]\s*$)")
# The error event a header names when the paste ends before the exception line: the type, this note, then the innermost
# frame's source line. The note is msdoctor's, not the log's: the fallbacks read the type and the code only.
IPYTHON_HEADER_NOTE = ", named by IPython's traceback header (the paste ends before its message)"
# A C++ process that aborts on an exception (MindIE, ATB, torch_npu's C++ side): the exception's class.
# Its `  what():  message` line (the exception's message) is joined to it by the scanner (`… 'c10::Error'  what():
# message`): the record's message is then the what() text.
CPP_TERMINATE_RE = re.compile(r"^terminate called after throwing an instance of '(?P<type>[\w:<>, ]{1,120})'"
                              r"(?:\s*$|\s+what\(\):\s*(?P<msg>.*)$)")
CPP_WHAT_RE = re.compile(r"^\s*what\(\):\s+(?P<msg>\S.*)$")
# `2025-01-01-20:10:17.012.780`; some CANN/HCCL builds write the milliseconds after a colon (`…:17:012.780`).
TS_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})-(\d{2}):(\d{2}):(\d{2})[.:](\d{3})\.(\d{3})")


@dataclass(frozen=True)
class LogRecord:
    """One parsed line. ``time`` is seconds since the epoch read as UTC (only differences matter)."""

    grammar: str  # mindspore | plog | torch-npu | pylog | python-exc | traceback | plain
    message: str
    level: str | None = None
    module: str | None = None
    pid: int | None = None
    time: float | None = None
    ts_text: str | None = None
    src: str | None = None
    src_line: int | None = None
    func: str | None = None
    exc_type: str | None = None
    rank: int | None = None

    @property
    def is_error(self) -> bool:
        return self.level in ERROR_LEVELS or self.grammar == "python-exc"


def parse_ts(text: str) -> float | None:
    """`yyyy-mm-dd-hh:mm:ss.fff.zzz` (ms.µs) → seconds; None when the text holds no such stamp."""
    m = TS_RE.search(text)
    if not m:
        return None
    y, mo, d, h, mi, s, ms, us = (int(g) for g in m.groups())
    try:
        return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + ms / 1e3 + us / 1e6
    except (ValueError, OverflowError):
        return None


def _pylog_ts(ts: str, ms: str) -> float | None:
    try:
        date, clock = ts.split(" ")
        y, mo, d = (int(x) for x in date.split("-"))
        h, mi, s = (int(x) for x in clock.split(":"))
        return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + int(ms) / 1e3
    except ValueError:
        return None


def parse_line(line: str) -> LogRecord:
    """Try the grammars in order (most specific first); a line that fits none is ``plain``."""
    text = line.rstrip("\r\n")
    if text.startswith("["):
        m = MINDSPORE_RE.match(text)
        if m:
            return LogRecord(
                "mindspore", m["msg"], m["level"], m["module"], int(m["pid"]), parse_ts(m["ts"]), m["ts"],
                m["src"], int(m["line"]), m["func"],
            )
        m = PLOG_RE.match(text)
        if m:
            rest = m["rest"]
            src = PLOG_SRC_RE.search(rest)
            return LogRecord(
                "plog", rest, m["level"], m["module"], int(m["pid"]), parse_ts(m["ts"]), m["ts"],
                src["src"] if src else None, int(src["line"]) if src else None,
            )
        m = TORCH_NPU_RE.match(text)
        if m:
            ts = m["ts"]
            return LogRecord(
                "torch-npu", m["msg"], m["level"], None, int(m["pid"]), _pylog_ts(f"{ts[:10]} {ts[11:]}", "000"),
                ts, rank=int(m["rank"]) if int(m["rank"]) >= 0 else None,
            )
    m = PYLOG_RE.match(text)
    if m:
        return LogRecord("pylog", m["msg"], m["level"], m["module"], time=_pylog_ts(m["ts"], m["ms"]), ts_text=m["ts"])
    m = PY_EXC_RE.match(text)
    if m:
        return LogRecord("python-exc", m["msg"] or "", "ERROR", exc_type=m["type"])
    m = CPP_TERMINATE_RE.match(text)
    if m:
        return LogRecord("python-exc", m["msg"] or text, "ERROR", exc_type=m["type"])
    m = TRACEBACK_RE.match(text)
    if m:
        return LogRecord("traceback", text, exc_type=m["ipy"])
    return LogRecord("plain", text)


# -- what pasting and launchers put in front of a log line -----------------------------------------

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# ... and what is left of them where the page dropped the escape byte (GitHub does): `[1;36m(VllmWorker TP0
# pid=2345)[0;0m ERROR …`, `[0;31mModuleNotFoundError[0m: …`, or `less`'s caret notation `^[[0;36m`. Read only in a
# line that holds a reset (`[0m`, `[0;0m`, `[00m`, `[39m`): a coloured line ends its colour, and a bracketed number
# with an `m` means something else in a line without one.
ANSI_REMNANT_RE = re.compile(r"(?:\^\[)?\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}m")
ANSI_RESET_RE = re.compile(r"\[(?:0;0|00?|39)m")
# One prefix at a time, repeated: `[rank1]:` (torchrun), `[1,0]<stderr>:` (mpirun: job 1, rank 0), `(RayWorkerWrapper
# pid=1234, ip=…)` / `(pid=1234)` / `(VllmWorker rank=1 pid=7226)` (Ray, vLLM), ISO / syslog time stamps,
# docker compose's `service-1  | `, a markdown backtick, leading blanks. A prefix that carries the line's
# level (group `lvl`) says whether the line is an error even when its message fits no grammar: vLLM's `ERROR
# 10-15 16:32:16 [core.py:708] ` (older vLLM: `ERROR 10-15 16:32:16 core.py:708] `), c10's `[W614
# 19:45:30.602900611 compiler_depend.ts:545] `, glog's `E0606 10:00:00.123456 12345 file.cc:123] ` (also with
# the year: `E20251208 …`), MindIE / ATB / DeepSpeed's `[2025-11-25 17:59:09.908267] [240] [245] [llm]
# [ERROR] [executor.cpp:646] `, loguru's `| ERROR | mod:fn:12 - `, transformers' / LLaMA-Factory's `[INFO|file.py:
# 12] 2024-… >> ` and `05/17/2024 01:30:26 - INFO - name - `.
_LVL = r"(?P<lvl>(?i:error|warn|warning|info|debug|critical|fatal|trace))"
PREFIX_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("rank", re.compile(r"^\s*\[rank(\d+)\]:\s?")),
    # Open MPI's --tag-output: `[jobid,MCW_rank]<stdxxx>:` (orterun(1)); the rank is the second number, the first
    # the job (1 for the first mpirun job: horovod#1012's `[1,0]<stderr>:` … `[1,3]<stderr>:` are ranks 0 and 3)
    ("rank", re.compile(r"^\s*\[\d+,(\d+)\]<(?:stdout|stderr|stddiag)>:\s?")),
    # torchrun's `--tee` / `--log-line-prefix-template` default `[default0]:` (role and LOCAL rank: the global
    # `[rank0]:` usually follows it) is stripped only; a bare `[0]:` (NeMo's and some launchers' local prefix,
    # nemo#8460) names the rank, except a markdown link reference (`[1]: https://…`) and torchrun's failure summary,
    # whose entries are a bare `[0]:` line (logstate.ELASTIC_*: no rank prefix, the rows under it name the rank)
    ("", re.compile(r"^\s*\[default\d{1,5}\]:\s?")),
    ("rank", re.compile(r"^\[(\d{1,5})\]:\s(?=\s*\S)(?!\s*(?:https?://|www\.))")),
    ("pid", re.compile(r"^\s*\((?:[\w.:-]+(?:=\d+)? ){0,3}pid=(\d+)(?:, ip=[\d.:a-f]+)?\)\s?")),
    ("", re.compile(r"^\s*(?P<lvl>ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                    r"(?:\[[\w./-]+:\d+\]|[\w./-]+:\d+\]) ")),
    ("", re.compile(r"^\s*\[(?P<lvl>[EWIF])\d{3,4}(?: [^\]]{0,120})?\] ")),
    ("", re.compile(r"^\s*\[(?P<lvl>[EWIF]) [\w./-]+:\d+\] ")),  # older torch: `[E OpParamMaker.cpp:273] `
    ("", re.compile(r"^(?P<lvl>[EWIF])\d{4}(?:\d{4})? \d\d:\d\d:\d\d\.\d+\s+\d+ [\w./-]+:\d+\] ")),
    ("", re.compile(r"^\s*\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\] "
                    r"(?:\[[^\]\s]{1,80}\] ){0,4}\[" + _LVL + r"\] (?:\[\d+\] )?(?:\[[\w./-]+:\d+(?::\w+)?\] ?)?(?::\s)?")),
    # sglang (`[2025-06-05 02:54:50 TP0] `)
    ("", re.compile(r"^\s*\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?: [A-Za-z]+\d*){0,2}\] ")),
    ("", re.compile(r"^\[(?P<lvl>INFO|WARNING|ERROR|DEBUG|CRITICAL)\|(?:[\w./-]+:\d+\] \d{4}-\d{2}-\d{2} [\d:,.]+|"
                    r"\d{4}-\d{2}-\d{2} [\d:,.]+\] [\w./-]+:\d+) >> ")),
    ("", re.compile(r"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d - (?P<lvl>INFO|WARNING|ERROR|DEBUG|CRITICAL) - [\w.]+ - ")),
    ("", re.compile(r"^\s*\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s*(?:\|\s*|- )?(?=\S)")),
    # Python logging's `%(asctime)s - %(name)s - %(levelname)s - ` after its time stamp (GPUStack, LMDeploy):
    # `gpustack.worker.serve_manager - ERROR - Error provisioning model instance …`, and without the name
    ("", re.compile(r"^(?:[A-Za-z_][\w.]{0,100} - )?(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) - (?=\S)")),
    # TensorFlow's C++ logger (its stream executor, kernels, XLA): `E tensorflow/stream_executor/cuda/cuda_driver.cc:406] `,
    # after its time stamp `2019-11-13 18:56:18.908538: E …` (the ISO stamp is stripped first, its colon stays) and
    # with a Windows build path (`E C:\tf_jenkins\…\cuda_dnn.cc:396] `): the level letter, a C++ source, a line
    ("", re.compile(r"^(?::\s)?(?P<lvl>[EWIF]) (?:[A-Za-z]:\\)?[\w./\\-]{1,300}\.(?:cc|cpp|cu|h):\d{1,6}\] (?=\S)")),
    # ONNX Runtime's own logger: `[E:onnxruntime:Default, cann_call.cc:139 CannCall] ` (V/I/W/E/F)
    ("", re.compile(r"^\s*\[(?P<lvl>[VIWEF]):onnxruntime:[^\]]{0,200}\] ")),
    # Paddle Lite's `[F 12/20  9:56:17.932 …/lite/kernels/nnadapter/engine.cc:294 Engine] `
    ("", re.compile(r"^\s*\[(?P<lvl>[EWIF]) \d{1,2}/\d{1,2}\s{1,3}\d{1,2}:\d\d:\d\d\.\d+ [^\]]{1,200}\] ")),
    # loguru's `| ERROR    | module:func:12 - ` after its time stamp
    ("", re.compile(r"^(?P<lvl>ERROR|WARNING|INFO|DEBUG|CRITICAL|SUCCESS)\s*\| [\w.:<>-]+ - ")),
    # `CRITICAL [vllm] `, `ERROR [engine] `: a level word, then the logger's name in brackets
    ("", re.compile(r"^(?P<lvl>CRITICAL|ERROR|FATAL) \[[\w.:-]{1,60}\] (?=\S)")),
    # pip, setuptools and most command-line tools: `ERROR: Could not find a version …`, `error: subprocess-…`
    ("", re.compile(r"^(?P<lvl>ERROR|FATAL|error|fatal): (?=\S)")),
    ("", re.compile(r"^[a-z][\w.]*-\d+: (?=\S)")),  # pdsh / DeepSpeed host prefix `worker-1: `
    # Slurm's `srun -l` task label (` 0: ValueError: …`, `12:   File "…", line 3`): a task number, a colon, a space
    ("", re.compile(r"^ {0,4}\d{1,5}: (?=\S| )")),
    # an issue title's tag before the pasted error (`[BUG] RuntimeError: NPU out of memory. Tried to allocate …`)
    ("", re.compile(r"^\[(?:BUG|Bug|bug)\]:? (?=\S)")),
    # Ray's C++ core log: `[2026-04-08 14:49:46,095 E 556036 556036] logging.cc:474: *** SIGSEGV received …`
    ("", re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} (?P<lvl>[EWIF]) \d{1,10} \d{1,10}\] "
                    r"[\w./-]{1,200}:\d{1,7}: ")),
    # OpenVINO's Model Optimizer and its tools: `[ ERROR ]  List of operations that cannot be converted to Inference
    # Engine IR:`, `[ WARNING ]  …` (round 75 c: geti-297, openvino-352 — its error lines had been read as no level)
    ("", re.compile(r"^\s*\[ (?P<lvl>ERROR|WARNING|INFO|DEBUG|CRITICAL|FATAL) \] {1,3}(?=\S)")),
    # docker compose `vllm-1  | `, also before an indented line (`vllm-1  |     File …`, `vllm-1  |  <no registered kernels>`)
    ("", re.compile(r"^[a-z0-9][\w.-]{0,60}[-_]\d{1,3}\s+\| (?=\S| )")),
    ("tick", re.compile(r"^`{1,3}(?=\S)")),  # a line pasted inside markdown backticks
    # a line number and a tab in front (`cat -n`, an editor's or a web viewer's copy with line numbers:
    # `1145\t[rank3]: RuntimeError: …`); a number then a tab starts no log line of its own
    ("", re.compile(r"^\s*\d{1,7}\t(?=\S| )")),
    # an exception quoted inside a sentence in Chinese (`多机训练时通信超时了。torch.distributed.DistStoreError:
    # Socket Timeout`): the prose up to the last CJK character or full-width punctuation before the class name
    # (`…镜像部署GLM4.5V报错“AssertionError: 12 is not divisible by 8”，为啥…`: also inside an opening quote), and
    # before a logger's own `[ERROR] ` line (`报错：…启动模型提示[ERROR] 2026-06-12-08:41:39 (PID:379, …) ERR00100 …`)
    ("", re.compile(r"^[^\n]{0,400}[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]\s*[:：]?\s*[\"'`“‘「『]?\s*"
                    r"(?=[A-Za-z_][\w.]{0,120}(?:Error|Exception): |\[(?:ERROR|CRITICAL)\] )")),
    # a markdown or e-mail quote (`> RuntimeError: …`, `> > …` nested, a REPL's `>>> `): GitHub issues quote the
    # error they ask about; one space after the marks is the quote's, the rest stays (a quoted frame's indent)
    ("", re.compile(r"^ {0,3}>(?: ?>)* (?=\S| )")),
    # pytest's report of a failed test: `E       RuntimeError: Response is empty` (and its `>       code` line)
    ("", re.compile(r"^[E>] {3,}(?=\S)")),
    # a Python logger's `[file.py:654] ` left when the paste cut the level and time before it (vLLM's
    # `[multiproc_executor.py:654] RuntimeError: …`)
    ("", re.compile(r"^\[[\w-]+\.(?:py|cc|cpp|h|c):\d+\] (?=\S)")),
    # ComfyUI's report of a failed node: `!!! Exception during processing !!! Torch not compiled with CUDA enabled`
    ("", re.compile(r"^!!! (?P<lvl>Exception) during processing !!! (?=\S)")),
    ("", re.compile(r"^\s+(?=\S)")),
)
RAY_REPEATED_RE = re.compile(r"\s*\[repeated \d+x across cluster\]$")
_LEVEL_WORDS = {"E": "ERROR", "W": "WARNING", "I": "INFO", "F": "CRITICAL", "WARN": "WARNING", "FATAL": "CRITICAL",
                "EXCEPTION": "ERROR"}


@dataclass(frozen=True)
class Prefixed:
    """A line without its launcher/paste prefixes: the text, the rank a prefix named, the level a prefix
    carried (ERROR, WARNING, INFO, DEBUG, CRITICAL; None when no prefix said, or the message under it is
    indented: a traceback frame or a quoted source line, not the message of that level)."""

    text: str
    rank: int | None = None
    level: str | None = None


def strip_prefix_info(text: str) -> Prefixed:
    """The log line without what a launcher or a paste put in front of it, with what the prefixes said.

    ANSI colour codes go everywhere; the prefixes only at the start, any number of them in any order.
    """
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    if ("[0" in text or "[39m" in text) and ANSI_RESET_RE.search(text):  # the byte test first: every line passes here
        text = ANSI_REMNANT_RE.sub("", text)
    rank: int | None = None
    level: str | None = None
    tick = ray = False
    for _ in range(8):
        for kind, rx in PREFIX_RES:
            m = rx.match(text)
            if m and m.end() > 0:
                if kind == "rank" and rank is None:
                    rank = int(m.group(1))
                tick = tick or kind == "tick"
                ray = ray or kind == "pid"
                lvl = m.groupdict().get("lvl")
                text = text[m.end() :]
                if lvl and level is None:
                    word = lvl.upper()
                    level = _LEVEL_WORDS.get(word, word) if not text[:1].isspace() else ""
                break
        else:
            break
    if tick and text.endswith("`"):
        text = text.rstrip("`")
    if ray and text.endswith("cluster]"):  # Ray's de-duplication note after a repeated line
        text = RAY_REPEATED_RE.sub("", text)
    return Prefixed(text, rank, level or None)


def strip_prefixes(text: str) -> tuple[str, int | None]:
    """The log line without what a launcher or a paste put in front of it, and the rank a prefix names."""
    p = strip_prefix_info(text)
    return p.text, p.rank


def split_embedded(text: str) -> list[str]:
    """A message quoted in a JSON string or a Python repr (literal ``\n`` between its lines) → its lines."""
    return [p for _i, p in split_embedded_at(text)]


def split_embedded_at(text: str) -> list[tuple[int, str]]:
    """:func:`split_embedded` with each line's index in the string, blank lines counted (a blank line between two
    lines of a string parts them as it does in a file)."""
    if "\\n" not in text:
        return [(0, text)]
    pieces = text.replace('\\"', '"').replace("\\t", "\t").split("\\n")
    # the string's own quotes (and a JSON body's key) are not part of its first and last lines
    pieces[0] = JSON_OPEN_RE.sub("", pieces[0], count=1)
    pieces[-1] = JSON_CLOSE_RE.sub("", pieces[-1], count=1)
    return [(i, p) for i, p in enumerate(pieces) if p.strip()]


# A paste whose line breaks a forum or a Q&A form dropped: every record of the log on one line, joined by a space.
# A record starts where a log line of a known grammar would. Strong starts are ones a log writes only at a line's
# start: a traceback's head or frame, MindSpore's / CANN's `[ERROR] HCCL(pid,…` and torch_npu's `[ERROR] 2024-…`,
# c10's `[W NPUStream.cpp:365]`, glog's `E0817 16:52:02.414082`, a CANN code with its time (`EI0006: 2024-08-05-…`)
# or opening its block (`EZ9999: Inner Error!`, plog detail `EZ9999  [InferShape] …`).
# Prefixes stack in front of one record (Ray's `(Worker pid=N)`, vLLM's `ERROR 05-15 11:58:24`, `[rank1]:`), so
# they make a flattened line only when one of them comes again. Once a line is flattened, it is also cut before
# weak starts: a Python exception (`RuntimeError: `), a bare CANN code (`EZ9999  [`), a bracketed level, a time stamp.
FLAT_STRONG_RE = re.compile(
    r"(?<=\s)(?:Traceback \(most recent call last\):|File \"[^\"]{1,300}\", line \d{1,7}, in |"
    r"\[(?:ERROR|WARNING|INFO|DEBUG|CRITICAL|EXCEPTION|EVENT)\] (?:[A-Z_]{2,20}\(\d{1,9},|\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d)|"
    r"\[[WEI]\d{0,4} [\w./-]{1,80}:\d{1,6}\] |[EWIF]\d{4} \d\d:\d\d:\d\d\.\d{3,9} |"
    r"E[A-Z0-9]\d{4}: (?:\[PID: \d{1,9}\] )?\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d|E[A-Z0-9]\d{4}: Inner Error!|E[A-Z0-9]\d{4}  [A-Z\[])"
)
FLAT_PREFIX_RE = re.compile(
    r"(?:^|(?<=\s))(?:\[rank\d{1,5}\]:|\((?:[\w.-]{1,60} )?(?:rank=\d{1,5} )?pid=\d{1,9}(?:, ip=[\d.]{7,15})?\) |"
    r"(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d)"
)
FLAT_WEAK_RE = re.compile(
    r"(?<=\s)(?:During handling of the above exception|The above exception was the direct cause|"
    r"E[A-Z0-9]\d{4}(?::|  )|(?:[a-z_]\w{0,40}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception): |"
    r"\[(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL|FATAL)\][ :]|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)"
)
# what only heads a record (a launcher's prefix, a level and time stamp, a source location): joined to what follows
FLAT_HEAD_RE = re.compile(
    r"(?:\s*(?:\[rank\d{1,5}\]:|\([^()]{1,120}\)|(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)(?: \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)?|"
    r"\[[\w./-]{1,200}:\d{1,7}\]|\[(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL|FATAL)\]:?))+\s*"
)
FLAT_MIN = 300  # a line shorter than this is a line, not a flattened log


def split_flattened_at(text: str) -> list[tuple[int, str]]:
    """A long line that holds several records of a log whose line breaks were lost → its records (index, text);
    the line itself when it is not one."""
    if len(text) < FLAT_MIN:
        return [(0, text)]
    strong = [m.start() for m in FLAT_STRONG_RE.finditer(text, 1)]
    prefixes = [m.group(0)[:12] for m in FLAT_PREFIX_RE.finditer(text)]
    if not strong and len(prefixes) == len(set(prefixes)):
        return [(0, text)]
    weak = [m.start() for m in FLAT_WEAK_RE.finditer(text, 1)]
    again = [m.start() for m in FLAT_PREFIX_RE.finditer(text, 1)]
    cuts = sorted({*strong, *weak, *again})
    bounds = [0, *cuts, len(text)]
    pieces: list[str] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        piece = text[a:b].rstrip()
        if pieces and FLAT_HEAD_RE.fullmatch(pieces[-1]):
            pieces[-1] += " " + piece  # a launcher's prefix or a bare level heads the record after it
        else:
            pieces.append(piece)
    if len(pieces) < 2:
        return [(0, text)]
    return [(i, p) for i, p in enumerate(p for p in pieces if p.strip())]


# `{"error": "` / `{"detail": {"message": "` / a bare opening quote before the first line of an embedded message, and
# the closing `"}` after its last
JSON_OPEN_RE = re.compile(r'^\s*(?:\{\s*"[\w .-]{1,60}"\s*:\s*){1,3}"|^\s*"(?=\S)')
JSON_CLOSE_RE = re.compile(r'"\s*\}{0,3}\s*,?\s*$')


# -- MindSpore exception banners ----------------------------------------------------------------

BANNER_RULE_RE = re.compile(r"^-{10,}\s*$")
BANNER_HEAD_RE = re.compile(r"^- (?P<name>[A-Za-z+ ]+?(?: Message| Stack| error| Code)?)(?::| \(For framework developers\))")


def split_banner(text: str) -> dict[str, str]:
    """Split a MindSpore exception text into its sections.

    The banner is ``----`` / ``- Name:`` / ``----`` followed by the section body, e.g. ``- Ascend Error
    Message:``, ``- Framework Error Message:``, ``- C++ Call Stack: (For framework developers)``,
    ``- Kernel error:``. Text before the first section is returned under ``"message"``.
    """
    sections: dict[str, list[str]] = {"message": []}
    current = "message"
    for raw in text.splitlines():
        line = raw.rstrip()
        if BANNER_RULE_RE.match(line):
            continue
        head = BANNER_HEAD_RE.match(line)
        if head and line.startswith("- "):
            current = head["name"].strip()
            sections.setdefault(current, [])
            continue
        sections[current].append(line)
    out = {k: "\n".join(v).strip() for k, v in sections.items()}
    return {k: v for k, v in out.items() if v or k != "message"}


# -- which rank a file belongs to ---------------------------------------------------------------

PATH_RANK_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("path:worker_N", re.compile(r"(?:^|/)worker_(\d+)\.log")),
    ("path:rank_N", re.compile(r"(?:^|/)rank[_-]?(\d+)(?:/|\.|$)")),
    ("path:device-N", re.compile(r"(?:^|/)device-(\d+)/")),
    ("path:deviceN", re.compile(r"(?:^|/)device(\d+)/")),
)

# Content that names the rank of the process that wrote the file (first MiB of the file).
RANK_HINT_RES: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("content:rank id", re.compile(rb"This node \d+ rank id: (\d+)")),
    ("content:Global rank id", re.compile(rb"Global rank id[:\s]+(\d+)")),
    ("content:RANK_ID", re.compile(rb"RANK_ID=(\d+)")),  # literal first: sre searches it fast
    ("content:HCCL rank", re.compile(rb"rankNum\[\d+\], rank\[(\d+)\]")),
    ("content:HCCL [rank] block", re.compile(rb"\[hccl-\d+-\d+-\d+-[\w-]+\]\[(\d+)\]")),
    ("content:RankID", re.compile(rb"RankID:(\d+)\)")),
    # HCCL's resource-allocation report (EI0007) names the reporting process's own rank:
    # `Failed to allocate resource[qp] with info [aicpu rank:15,localUserrank:15,localIpAddr: …`
    ("content:HCCL aicpu rank", re.compile(rb"\[aicpu rank:(\d+),localUserrank:\d+")),
)
MSRUN_WORKER_RE = re.compile(rb"Start worker process with rank id:(\d+), log file:(\S+?)\.? Environment")
SCHED_NODE_RE = re.compile(rb"The new node: (\d+)\(role: MS_WORKER\), rank id: (\d+)")
WORLD_RES: tuple[re.Pattern[bytes], ...] = (
    re.compile(rb"expected node number: (\d+)"),
    re.compile(rb"RANK_SIZE=(\d+)"),
    re.compile(rb"MS_WORKER_NUM=(\d+)"),
    re.compile(rb"--worker_num[= ](\d+)"),
)


def rank_from_path(path: str) -> tuple[int | None, str]:
    """Rank named by the file's path, and which naming said so (``worker_N``, ``rank_N``, ``device-N``)."""
    p = PurePath(path).as_posix()
    for source, rx in PATH_RANK_RES:
        found = rx.findall(p)
        if found:
            return int(found[-1]), source
    return None, ""


def file_kind(path: str) -> str:
    name = PurePath(path).name
    if name.startswith("scheduler"):
        return "scheduler"
    if name.startswith("worker_"):
        return "worker"
    if name.startswith("plog-"):
        return "plog"
    if name.startswith("device-"):
        return "device"
    if name.startswith("mindspore.") and ".log" in name:
        return "glog"
    if name in ("msrun.log", "msrun.out") or name.startswith("msrun"):
        return "msrun"
    return "log"


def rank_hints(head: bytes) -> dict[str, set[int]]:
    """Every rank the head of a file names, by kind of hint. One distinct value means the file is that rank's."""
    out: dict[str, set[int]] = {}
    for source, rx in RANK_HINT_RES:
        if source == "content:RANK_ID":  # not LOCAL_RANK_ID=, MS_RANK_ID=…: the name must stand alone
            vals = {int(m.group(1)) for m in rx.finditer(head) if m.start() == 0 or head[m.start() - 1 : m.start()] in b" \t\n[\"'"}
        else:
            vals = {int(v) for v in rx.findall(head)}
        if vals:
            out[source] = vals
    return out


def world_size_hint(head: bytes) -> int | None:
    sizes = [int(v) for rx in WORLD_RES for v in rx.findall(head)]
    return max(sizes) if sizes else None
