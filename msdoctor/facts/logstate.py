"""The line-scanning state machine shared by both scan engines (Python's re in :mod:`logscan`, GNU grep in
:mod:`loggrep`): what a candidate line means (grammar, prefixes, signatures, progress, exceptions), the
per-file state it accumulates, and the per-file summary. The engines only decide which lines are
candidates and how the neighbouring bytes are read (a block in memory, or ``pread`` on a file).
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from msdoctor.engine.catalogue import LinePattern, Rule
from msdoctor.engine.evaluate import SignatureSet
from msdoctor.errors import CatalogueError
from msdoctor.facts.layout import layout_named
from msdoctor.facts.logformats import (
    CPP_TERMINATE_RE,
    CPP_WHAT_RE,
    FLAT_MIN,
    IPYTHON_HEADER_NOTE,
    MSRUN_WORKER_RE,
    SCHED_NODE_RE,
    TS_RE,
    LogRecord,
    parse_line,
    parse_ts,
    rank_from_path,
    rank_hints,
    split_embedded_at,
    split_flattened_at,
    strip_prefix_info,
    strip_prefixes,
    world_size_hint,
)

HEAD = 1 << 16  # rank / world-size hints are read from the first 64 KiB only

MAX_TEXT = 400  # evidence text is cut to this many characters

KEEP_FIRST = 40  # anomalies kept from the start of a file …

KEEP_RECENT = 120  # … and since the last progress line (a flood keeps its first and last lines)

CLUSTER_UP = "Cluster is successfully initialized"

# The generic error markers, one table for both scan engines: Python's re reads each entry as a bytes pattern
# (GENERIC_MARKERS), GNU grep as the ERE that loggrep.to_ere translates it to (loggrep.GENERIC_ERE), so a
# line is a candidate for both or for neither (tests/logs/test_logs_engine_gaps2.py runs both on the corpus).
# Written in what both read alike: no look-arounds or back-references; `\r` and `[^…\n]` translate.
GENERIC_MARKER_PATTERNS: tuple[str, ...] = (
    r"\[ERROR\]", r"\[CRITICAL\]", r"\[EXCEPTION\]", r"Traceback \(most recent call last\)",
    r"(?:Error|Exception):",  # `KeyError: 'x'`, a bare `Error:` at the end, `OSError:cannot load library …` unspaced
    r"(?:ERROR|CRITICAL) [0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]",  # vLLM's level prefix
    r"\[(?:error|fatal|FATAL)\]",  # MindIE / ATB levels in lower case
    r"^[EF][0-9]{4} [0-9][0-9]:[0-9][0-9]:[0-9][0-9]", r"^[EF][0-9]{8} [0-9][0-9]:[0-9][0-9]:[0-9][0-9]",  # glog
    r"\[E[0-9]{3,4} [0-9][0-9]:[0-9][0-9]:[0-9][0-9]", r"\[E [A-Za-z_]",  # c10's `[E614 19:45:30…]`, `[E File.cpp:1]`
    r"(?:Error|Exception)\r?$", r"^KeyboardInterrupt\r?$", r"[a-z]\.[A-Za-z]*(?:Invalid|Failure): ",  # a bare `AssertionError`, pyarrow's
    r"(?:Error|Exception)\([A-Za-z_][A-Za-z0-9_.]{0,80}\):",  # Ray's `RayTaskError(OutOfMemoryError): …`, `…Error(EZ1001):`
    r"[a-z]\.[a-z]*error: ", r"[a-z]\.timeout: ",  # Python's lower-case classes: `socket.gaierror: [Errno -2] …`
    # levels of loggers the prefixes know (logformats.PREFIX_RES): ONNX Runtime's `[E:onnxruntime:…]`, Paddle Lite's
    # `[F 12/20  9:56:17.932 …]`, transformers' `[ERROR|file.py:12] …`, loguru's `| ERROR    | mod:fn:1 - `
    r"\[[EF]:onnxruntime:", r"^\[[EF] [0-9][0-9]?/[0-9][0-9]? ", r"^\[(?:ERROR|CRITICAL)\|", r"\| (?:ERROR|CRITICAL) +\| ",
    r"(?:CRITICAL|FATAL) \[", r" - (?:ERROR|CRITICAL) - ",  # `CRITICAL [logger] `, `… - ERROR - name - `
    r"terminate called after throwing",  # a C++ abort
    # an exception whose name ends in no Error / Exception (`zipfile.BadZipFile: …`, `concurrent.futures.process.
    # BrokenProcessPool: …`, `StopIteration`): read as the exception line only right under a traceback's frames
    r"^[A-Za-z_][A-Za-z0-9_.]*\.[A-Z][A-Za-z0-9_]*(?:: |\r?$)", r"^(?:StopIteration|StopAsyncIteration|GeneratorExit)(?:: |\r?$)",
    # a process killed by a signal, as its shell or faulthandler says it (CRASH_LINE_RE below decides)
    r"(?:^|: +[0-9]{1,10} +|^Fatal Python error: )(?:Segmentation fault|Aborted|Bus error|Illegal instruction|"
    r"Floating point exception|Killed)(?: +\(core dumped\))?(?: |\r?$)",
    r"^!!! Exception during processing !!!",  # ComfyUI's report of a failed node (logformats.PREFIX_RES)
    r'File "[^"\n]{1,300}", line [0-9]',  # a traceback frame: a paste cut before its exception line is still read
    r"\.pyx?:[0-9]{1,7} in( |\r?$)",  # rich's frame in its box (`│ /x/train.py:746 in <module>  │`, RICH_FRAME_RE)
    # IPython's frames and the arrow at the line that raised (IPYTHON_FRAME_RE below): Colab's `[/x/util.py](https://…)
    # in <module>`, IPython 7's `/x/util.py in f(a)`, IPython 8's `File ~/x/util.py:7, in f()` and `Cell In[3], line 7`,
    # `<ipython-input-3-…> in <module>`, `----> 7 import dgl`
    # (also after what is left of a colour code whose escape byte the page dropped: `[0;32m----> 1[0;31m …`)
    r"\.py\]\([^)\n]{0,600}\) in ", r"\.py in [A-Za-z_<]", r"(?:^|m)File [^ \n]{1,300}\.py:[0-9]{1,7}, in ",
    r"(?:^|m)Cell In\[[0-9]{1,6}\], line [0-9]", r"<(?:ipython-input-[^>\n]{1,60}|timed exec|string)>",
    r"(?:^|m)-{1,4}> ?[0-9]",
    r"^(?:ERROR|FATAL|error|fatal): ",  # pip / setuptools / command-line tools
    r"\] (?:ERROR|FATAL): ",  # the same after a bracketed time stamp (`[2026-06-09 13:13:59] ERROR: testcase failed`)
    r": (?:fatal )?error: ",  # a compiler's / linker's own (`ld.lld: error: …`, `x.cpp:22:10: fatal error: …`)
    r",[0-9][0-9][0-9] [EF] [0-9]{1,10} [0-9]{1,10}\] ",  # Ray's C++ core log (`[2026-04-08 14:49:46,095 E 55 55] `)
    r"^ {0,4}\[ (?:ERROR|FATAL|CRITICAL) \] ",  # OpenVINO Model Optimizer's level (`[ ERROR ]  List of operations …`)
    r": \[ONNXRuntimeError\] : ",  # ONNX Runtime's status exceptions (`InvalidArgument: [ONNXRuntimeError] : 2 : …`)
    r"^\[ASSERT\] ",  # an AscendC kernel's failed assertion (`[ASSERT] …/gather_v3_base.h:137: Assertion `…' Index …`)
    r"^\[(?:BUG|Bug|bug)\]:? [A-Za-z_.]{1,120}(?:Error|Exception):",  # an issue title's tag (`[BUG] RuntimeError: …`)
    CLUSTER_UP,  # logged by every rank at the same moment (the clock anchor)
    # torchrun's failure summary (ELASTIC_* below): its section headers and its rows as torch pads their names
    r"Root Cause \(first observed failure\):", r"Failures:\r?$",
    r"  (?:time {6}|host {6}|rank {6}|exitcode {2}|error_file|traceback ): ",
    # a stack dump of a waiting process (DUMP_THREAD_RE below): py-spy's thread header and Python frames,
    # faulthandler's thread header (its frames are `File "…", line N in f`, read above) and its time-out line
    r"^Thread (?:0x[0-9A-Fa-f]{1,16}|[0-9]{1,10}) \([a-z+ ]{1,30}\)", r"[Tt]hread 0x[0-9A-Fa-f]{1,16} \(most recent call first\)",
    r"^ {2,8}[^ ()][^()\n]{0,200} \([^()\n]{1,300}\.py:[0-9]{1,7}\) *\r?$", r"^Timeout \([0-9]{1,4}:[0-9][0-9]:[0-9][0-9]",
)  # fmt: skip

GENERIC_MARKERS = tuple(p.encode("ascii") for p in GENERIC_MARKER_PATTERNS)

# torchrun / torch.distributed.elastic's failure summary (the message of its ChildFailedError), e.g.
#   Failures:                                  (the other failed workers, or `  <NO_OTHER_FAILURES>`)
#   Root Cause (first observed failure):
#   [0]:
#     time      : 2023-08-01_01:06:47
#     host      : r1n2a6000bittensor
#     rank      : 4 (local_rank: 4)
#     exitcode  : -9 (pid: 208585)
#     error_file: <N/A>
#     traceback : Signal 9 (SIGKILL) received by PID 208585
# Each entry becomes a dict of st.elastic (section root/other, rank, local_rank, host, exitcode, pid, signal).
ELASTIC_HEAD_RE = re.compile(r"^(?:(?P<root>Root Cause \(first observed failure\))|(?:Other )?Failures):\s*$")
ELASTIC_ROW_RE = re.compile(r"^(?P<key>time|host|rank|exitcode|error_file|traceback)\s*: ?(?P<value>.*?)\s*$")
ELASTIC_RANK_RE = re.compile(r"^(?P<rank>\d{1,7})(?: \(local_rank: (?P<local>\d{1,7})\))?")
ELASTIC_EXIT_RE = re.compile(r"^(?P<code>-?\d{1,4})(?: \(pid: (?P<pid>\d{1,10})\))?")
ELASTIC_SIGNAL_RE = re.compile(r"^Signal (?P<sig>\d{1,3}) \((?P<name>SIG[A-Z0-9]{1,10})\) received by PID (?P<pid>\d{1,10})")
MAX_ELASTIC = 64  # entries kept per file
ELASTIC_GAP = 400  # lines an entry may follow its section's header or the entry before it (a child's traceback)
ELASTIC_ROWS = 8  # an entry's rows are consecutive: a row further than this from the last one ends the summary

# a broken or foreign line that still says ERROR; an AscendC kernel's `[ASSERT] …: Assertion `…' …` (the device
# prints it before the aivec exception that follows it; the line stays whole: rules read it as printed)
BARE_ERROR_RE = re.compile(r"^\[(?:ERROR|CRITICAL|EXCEPTION|ASSERT)\]")
# An issue's title by its tracker's type tag (`[Bug]: …`, `[Usage]: …`, `[Performance]: …`, `[BUG] …`, llama.cpp's
# `Eval bug: …`): a statement of what went wrong by the template's definition, whatever its words (not `[Feature]`,
# `[RFC]`, `[Doc]`: a request). A pasted title is a line of its own, the tag at its start.
ISSUE_TITLE_RE = re.compile(r"^\s{0,4}(?:\[(?:[Bb]ug|BUG|Usage|Performance|Installation|Misc|Question)\]:?|"
                            r"(?:Eval |Compile |Misc\. )?[Bb]ug:) {0,3}(?=\S)")
# The words of an error in a line of no known grammar (plain-paste mode only: in a log of a known grammar a
# line is an error by its level, never by a word of its message).
PASTE_ERROR_RE = re.compile(r"(?i:(?<![A-Za-z0-9])(?:errors?|fail(?:ed|ure|s)?|fatal|exception|abort(?:ed)?|cannot|can't|unable|"
                            r"invalid|unreachable|refused|denied|time[ds]? ?out|timeout|not (?:available|found|"
                            r"supported|exist|visible|open(?:ed)?|match(?:ed)?|divisible|compatible|implemented|enough|"
                            r"allowed|ready|initiali[sz]ed|comply|(?:set )?correctly)|does not (?:exist|match|comply|allow)|doesn't match|can not|"
                            r"(?:is|are)n't enough|must be set|expected\b.{1,80}\bbut (?:got|found|received)|"
                            r"no such|killed|segmentation fault|core dumped|panic|no module named|is null|"
                            r"undefined (?:symbol|reference)|command not found|"
                            r"null ?pointer|mismatch(?:ed|es)?|unsupport(?:ed)?|unavailable|illegal|incorrect|insufficient|"
                            r"overflow|out of memory|no space left|exceed(?:s|ed)?|corrupt(?:ed)?|abnormal|wrong|busy|"
                            r"divisible|crash(?:ed|es)?|deadlock|hang(?:s|ing)?|stuck|"
                            # a linker's, a shell's, a resolver's and a build's words (`multiple definition of`,
                            # `CMAKE_PREFIX_PATH: unbound variable`, `requirements are unsatisfiable`, `CMake 3.24.0 or
                            # higher is required`), a checkpoint loader's `Missing keys:` / `unexpected keys`
                            r"multiple definition of|unbound variable|unsatisfiable|no solution found|incompatible|"
                            r"or (?:higher|later|newer) is required|not registered|is not right|"
                            r"(?:missing|unexpected) keys?|"
                            # a statement of what is wrong without an error word (round 49, the one-line pastes
                            # of the corpus that were unreadable input): `Op X not support soc version`, `H.265
                            # don't support format 5`, `chn 0 has already been created!`, `chn num(27) is full`,
                            # `HCCL_BUFFSIZE_EP is too SMALL`, `buffer size(…) is smaller than need …`, `width
                            # should be in [10, 32768]`, `Dimensions must be equal`, `could not locate …`,
                            # `missing NPU kernel` (not gdb's hint `Missing separate debuginfos, use: …`), `SSL
                            # certificate problem`, `Loss is nan` / `'grad_norm': nan`, `link status: DOWN`
                            r"(?:not|n't) support(?:s|ed)?|could ?n[o']t|already (?:exists?|been|in use|registered|created)|"
                            r"is full|too (?:small|large|big|many|few|long|short)|(?:smaller|greater|larger|bigger) than|"
                            # what a thing lacks, said as a statement (round 55, the one-line FAQ pastes left unread:
                            # `this channel doesn't have taskID 8845!`, `No suitable workers.`, `Some model parameters
                            # are not in the checkpoint:`, `You should exec "export VC_TASK_INDEX=…" to configure …`)
                            r"(?:does|do|did)(?: not|n't) have|no (?:suitable|valid|matching|available)\b|"
                            r"out of (?:range|bounds)|"  # `The DDR address of the MTE instruction is out of range` (a title)
                            r"(?:is|are) not in the|you (?:should|must|need to) (?:exec|run|set|export|configure|install)|"
                            r"must (?:be|input|have|not)|should be|missing(?! separate debuginfo)|conflict(?:s|ing)?|problem|"
                            r"err|oom|caution|not present|"
                            # Python's TypeError of a call that does not fit the callee, said without an error word
                            # (an issue title quoting it in prose: `torch.npu.mem_get_info 出现 got multiple values for
                            # argument 'device' 错误`; `f() takes 1 positional argument but 2 were given`)
                            r"got (?:an unexpected (?:keyword )?|multiple values for (?:keyword )?)argument|"
                            r"positional arguments? but [0-9]{1,2} (?:were|was) given|"
                            r"(?:loss|norm)\W{0,4}(?:is\s)?-?nan)\b)|\bDOWN\b|"
                            r"\bWARN(?:ING)?\b|"
                            # an exception's class inside a sentence or as a repr (`TypeError("…")`, `InvalidArgumentError
                            # (see above …): …`, or ending a line: `…ascend 310 遇到MemoryError`; not CANN's
                            # `[FUNC:GetError]`, not a bare name in a table), a driver's `max picture width (0) err!`
                            r"\berr!|(?<![A-Za-z0-9_:])[A-Z][A-Za-z0-9]{0,60}(?:Error|Exception)(?:\(|:| \(|\s*$)|"
                            # Chinese words of a failure (报错 / 失败 / 错误 / 无法 / 异常 / 不支持 / 找不到 / 卡住 /
                            # 超时 / 崩溃 / 乱码 / 出错 / 出现: after CJK, `\b` is no boundary) followed by the message they
                            # quote (not a bare `报错信息如下:` before it: the words a guess reads are the quoted ones),
                            # and an issue title's `报X` (`…使用Paddle报NpuAclnnOpRunner: …`: 报 straight before the
                            # name of what failed)
                            r"(?:报错|失败|错误|无法|异常|不支持|找不到|卡住|卡死|超时|崩溃|乱码|出错|出现)[^\n]{0,300}?[A-Za-z]{3}|"
                            # ... or ending the statement of what failed (`编译…paddle lite报错`, `llama.cpp+CANN工作不正常`,
                            # `torch-npu版本2.7.1与推荐CANN版本不匹配`, `…提示算子不支持`, `…推理缓慢`, `…性能很差`; a CJK
                            # character's quantifier is grouped: the pre-filter reads bytes, where `了?` would make only
                            # its last byte optional)
                            r"(?:报错|失败|出错|异常|不正常|不匹配|不支持|卡住|卡死|卡顿|超时|崩溃|乱码|缓慢|(?:很|非常|特别)(?:慢|差))(?:了)?[\s。.!！?？)）]{0,3}$|"
                            r"报(?= ?[A-Za-z]{3})|"
                            # an issue's title by its tracker's type tag (ISSUE_TITLE_RE, read on the line before its
                            # prefixes are stripped: `[Bug]` is one)
                            + ISSUE_TITLE_RE.pattern + "|"
                            # what Python and a crash say without an error word (Python's `has no attribute`, also without
                            # `has` as a title keeps it: `… no attribute qkv_rmsnorm_rope`,
                            # `X has no SGlang implementation`, `opp_kernels is not installed?`, `… segfaults on …`)
                            r"(?i:\b(?:has )?no attribute\b|\bhas no [\w.-]{1,40} implementation\b|\bnot installed\b|\bseg ?fault(?:s|ed|ing)?\b)|"
                            # a process's non-zero exit status (`return code: 137`, `exitcode: 1`), also a Windows
                            # NTSTATUS as a 32-bit number (`Process finished with exit code -1073741819 (0xC0000005)`,
                            # `exit code 3221226505`: round 76 b, paddle-lite-10106)
                            r"(?i:\b(?:exit|return) ?code:? ?-?[1-9](?:[0-9]{0,3}|[0-9]{9})\b)|"
                            # a C / C++ assertion macro's report without an error word (round 68 j: ggml's
                            # `GGML_ASSERT: …/ggml.c:4411: ctx->mem_buffer != NULL`; TORCH_INTERNAL_ASSERT says `failed`)
                            r"\b[A-Z][A-Z0-9]{1,20}_ASSERT(?:_[A-Z]{1,10})?\b")  # fmt: skip

# A level named in a line of no known grammar, near its start (`[2026-04-28 07:58:58.469699][INFO]`, `WARNING:root:`,
# `mindocr.utils.callbacks INFO - epoch …`, `I0609 09:33:06.032086`, `Warning: tiling offset out of range`), or
# Python's warnings module anywhere in it (`…/modeling_qwen2.py:126: TracerWarning: …`): see ScanSpec.mixed
LEVEL_WORD_RE = re.compile(r"\b(?:INFO|DEBUG|TRACE|NOTICE|WARN(?:ING)?|[A-Z]?[a-z]*Warning)\b|^[IWD][0-9]{4} [0-9]{2}:[0-9]{2}")
LEVEL_WORD_SPAN = 80
PY_WARNING_RE = re.compile(r"\.py:[0-9]+: [A-Za-z]*Warning: ")
# ... and the words that make such a line an error there: the paste vocabulary's plainer statements of failure
# (not `Aborted request(s) … after the client closed it`, `npu is busy`, `too many`, a bare `WARN`, which a
# tool's status line beside a known grammar says without failing)
MIXED_ERROR_RE = re.compile(r"(?i:(?<![A-Za-z0-9])(?:errors?|err|fail(?:ed|ure|s)?|fatal|exception|cannot|can't|can not|"
                            r"could ?n[o']t|unable|invalid|illegal|refused|denied|"
                            r"not (?:found|supported|implemented|exist|enough|match(?:ed)?|compatible|available|registered)|"
                            r"(?:does|do|is|are)(?: not|n't) (?:exist|match|support(?:ed)?)|no such|no module named|"
                            r"has no attribute|undefined symbol|mismatch(?:ed|es)?|unsupport(?:ed)?|out of memory|"
                            r"incompatible|time[ds]? ?out|timeout|(?:loss|norm)\W{0,4}(?:is\s)?-?nan|overflow)\b)|"
                            # Chinese words of a failure (`…上触发了不支持的 NPU 算子`), the plain paste's less 无法: beside a
                            # quiet log a title's `无法成功 torch.compile …` says what never finished, not what failed
                            r"[A-Z][A-Za-z0-9]{0,60}(?:Error|Exception)\b|报错|失败|错误|不支持|异常|超时|崩溃|出错|卡住|卡死|"
                            r"(?i:expected\b.{1,80}\bbut (?:got|found|received))")

# A command line the user pasted (`$ mpirun -np 4 -x NCCL_ALGO=Ring --timeout 20 ./build/alltoall_perf …`, `python
# train.py --data_path … --error_log e.txt`): a shell prompt or a launcher, interpreter or path first (after `KEY=value`
# assignments), then its arguments. Its option names and values are not words of an error (`--timeout`, the fallback
# read as a COMM fault, nccl#2169): the paste reading tests the words left after them (COMMAND_ARG_RE). A command's
# own message is not one: `torchrun: error: …` and `python: can't open file …` have a colon after the name.
COMMAND_LINE_RE = re.compile(r"^\s{0,4}(?:(?:\(\S{1,60}\) ?)?(?:[\w.-]{1,40}@[\w.-]{1,60}:\S{0,120}|\S{0,60})?[$#] {1,3})?"
                             r"(?:[A-Z_][A-Z0-9_]{0,60}=\S{0,200}\s{1,4}){0,12}"
                             r"(?:(?:sudo|nohup|exec|time|env)\s{1,4}){0,3}"
                             r"(?:python[0-9.]{0,5}|torchrun|mpirun|mpiexec|srun|sbatch|salloc|msrun|deepspeed|accelerate|"
                             r"bash|sh|docker|podman|kubectl|pip[0-9.]{0,4}|conda|vllm|llamafactory-cli|swift|trtexec|"
                             r"mindie\w{0,20}|\S{0,200}/[\w.+-]{1,80}|[\w.-]{1,80}\.(?:py|sh))"
                             r"\s{1,4}(?=\S)(?!:)")
# ... and its arguments that are no words of an error: an option (`--timeout`, `-x`), an assignment (`NCCL_ALGO=Ring`,
# `--error_log=e.txt`), a path or a file name (`./build/alltoall_perf`, `e.txt`)
COMMAND_ARG_RE = re.compile(r"(?<!\S)(?:-{1,2}[A-Za-z][\w.-]{0,80}(?:=\S{0,200})?|[\w.-]{1,80}=\S{0,200}|\S{0,200}/\S{0,200}|"
                            r"[\w-]{1,80}\.[A-Za-z0-9]{1,8})(?!\S)")


def command_words(text: str) -> str | None:
    """The words of a pasted command line left after its options, assignments and paths, or None where the line
    is no command line (:data:`COMMAND_LINE_RE`)."""
    m = COMMAND_LINE_RE.match(text)
    if m is None:
        return None
    return COMMAND_ARG_RE.sub(" ", text[m.end():])


# A traceback's source line that opens the exception it raises, its message on the next lines (`raise ImportError(`,
# also after a prefix the scanner does not know): the template of a message, not an error line of a paste.
RAISE_OPEN_RE = re.compile(r"\braise [\w.]{1,120}\(\s*$")

# A compiler's, linker's or command's own error after its name or source position (`ld.lld: error: unable to find
# library -lx`, `bisheng: error: linker command failed …`, `x.cpp:22:10: fatal error: 'y.h' file not found`): an error
# in a log of any grammar (a build's output between a launcher's INFO lines); the line is kept whole (its file names).
TOOL_ERROR_RE = re.compile(r"^[\w.+/-]{1,300}(?::\d{1,7}){0,2}: (?:fatal )?error: (?=\S)")

# A process that died of a signal, as the shell or Python's faulthandler reports it (`Segmentation fault (core
# dumped)`, `bash: line 1: 4242 Killed   python train.py`, `Fatal Python error: Aborted`): an error in a log of
# any grammar, since the dead process could not log it at a level of its own.
CRASH_LINE_RE = re.compile(r"^(?:(?:\S{1,200}: )?line \d{1,7}: +\d{1,10} +)?(?:Fatal Python error: )?"
                           r"(?:Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception|Killed)"
                           r"(?: +\(core dumped\))?(?:(?<=\d) .{0,500}| {2,}\S.{0,500})?\s*$")

_DIGITS = re.compile(r"\d+")

TS_BYTES_RE = re.compile(rb"\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}[.:]\d{3}\.\d{3}")

LOSS_POINTS = 512  # the points of a file's loss curve kept (thinned by half each time it fills)

PROGRESS_HINT = "step"  # progress lines (LossMonitor, mindformers) carry no time stamp of their own

TS_IN_LINE = ":"  # cheap guard before the stamp search

@dataclass
class ScanSpec:
    """What to look for: the signature set and the combined byte-level pre-filter built from it."""

    sigs: SignatureSet
    engine: str = "auto"  # auto: grep for big files when it is installed; python: always Python's re
    grep_min_size: int = 4 << 20
    # A pasted excerpt in no known grammar (`NCCL WARN Connect to … failed`, a bare `torch_npu detected, but
    # NPU device is not available`): its lines with error words are read as errors (collect() rescans so).
    paste: bool = False
    # A log of a known grammar that held no error, rescanned as a paste (collect()): a line of no grammar that
    # still names its level (`[INFO]` of a Go daemon, `WARNING:root:`, `mindocr.utils.callbacks INFO -`) is that
    # level's line, not an error, whatever words its message has
    mixed: bool = False
    # Re-join the longest lines with the lines after them where they read as cut at a terminal's width
    # (wrap_width_weak): collect()'s last rescan of a paste in which no rule's error or warning was found.
    weak_wrap: bool = False
    prefilter: re.Pattern[bytes] = field(init=False)

    def __post_init__(self) -> None:
        # One pre-filter per signature set and paste flag: a process that reads many inputs (the corpus in the
        # tests, the TUI, a watchdog, collect()'s paste rescan) built it again for each, ~30 ms of re.escape
        # and compile every time.
        built = self.sigs.derived.get(("prefilter", self.paste))
        if built is None:
            built = self.sigs.derived[("prefilter", self.paste)] = self._build_prefilter()
        self.prefilter = built

    def _build_prefilter(self) -> re.Pattern[bytes]:
        parts: list[bytes] = list(GENERIC_MARKERS)
        if self.paste:
            parts.append(PASTE_ERROR_RE.pattern.encode("utf-8"))
        for rule, sg, anchors in self.sigs.entries:
            if anchors:
                parts.extend(re.escape(a.encode("utf-8")) for a in anchors)
            else:  # no literal to anchor on: the whole pattern joins the pre-filter
                part = _bytes_pattern(sg.pattern)
                try:
                    re.compile(part)
                except re.error as exc:  # a str-only escape (`\u4e00`): the pre-filter reads bytes
                    raise CatalogueError(f"{sg.source or rule.id}: signature pattern {sg.pattern[:80]!r} has no literal to "
                                         f"anchor on and does not compile as the bytes pre-filter ({exc}): write "
                                         f"non-ASCII characters literally, not as \\u escapes") from None  # fmt: skip
                parts.append(part)
        # Longest first so a long anchor is not shadowed by its own prefix; duplicates removed.
        uniq = sorted(set(parts), key=len, reverse=True)
        return re.compile(b"|".join(uniq), re.M)

def _bytes_pattern(pattern: str) -> bytes:
    """A str signature as an equivalent-enough bytes alternative (named groups dropped, flags scoped)."""
    p = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    # A leading word boundary defeats sre's first-character skip for the whole alternation (every branch is
    # then tried at every byte); without it the pre-filter only matches more, and the rule's regex decides.
    while p.startswith(("\\b", "(?:\\b")):
        p = p.replace("\\b", "", 1)
    m = re.match(r"^\(\?([aiLmsux]+)\)", p)
    if m:  # global flags are only legal at the very start of the combined regex: scope them
        p = f"(?{m.group(1).replace('u', '')}:{p[m.end():]})"
    return p.encode("utf-8")


def _event(rule: str | None, role: str, severity: str, lineno: int, text: str, ts: float | None,
           ts_text: str | None, groups: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
    ev: dict[str, Any] = {"rule": rule, "role": role, "severity": severity, "line": lineno,
                          "text": text[:MAX_TEXT], "time": ts, "ts": ts_text}  # fmt: skip
    if groups:
        ev["groups"] = groups
    ev.update((k, v) for k, v in extra.items() if v is not None)
    return ev

class _FileState:
    """Accumulates one file's findings while its blocks stream by."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.wrap_width: int | None = None  # the column a hard-wrapped paste was cut at (its lines are re-joined)
        self.hits: dict[str, dict[str, Any]] = {}  # rule id → {count, first, last}
        self.first_events: list[dict[str, Any]] = []
        self.recent: deque[dict[str, Any]] = deque(maxlen=KEEP_RECENT)
        self.recent_first: list[dict[str, Any]] = []  # first anomalies after the last progress line
        self.anomalies = 0
        self.progress_first: dict[str, Any] | None = None
        self.progress_last: dict[str, Any] | None = None
        self.progress_count = 0
        self.progress_shapes: dict[str, tuple[Rule, LinePattern]] = {}
        # the loss of each progress line that prints one ([step, loss, line]), every `loss_stride`-th once the
        # series is long (a long run's curve halved each time it reaches LOSS_POINTS): the log's loss curve
        self.losses: list[list[Any]] = []
        self.loss_seen = 0
        self.loss_stride = 1
        self.last_traceback: int | None = None
        self.exceptions: deque[dict[str, Any]] = deque(maxlen=3)
        self.pids: dict[int, int] = {}
        self.cluster_up: float | None = None
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.last_ts_text: str | None = None
        self.non_utf8 = 0
        self.binary_lines = 0
        self.lines = 0
        self.prefix_ranks: dict[int, int] = {}  # rank → lines whose prefix named it (`[rank3]:`, `[1,3]<stderr>:`)
        self.recognised = 0  # lines of a known grammar or matching a rule: is this a log at all?
        self.specific_line = -10  # the last line a catalogue rule (not a code family) read, or its detail
        self.specific_error = False  # … and whether that rule read it as an error
        self.specific_umbrella = False  # … or as a consequence (a wrapper whose detail follows)
        self.in_block = False  # the lines since are the CANN message block under it
        self.open_frames: list[str] = []  # frames (source paths) of a traceback no exception line closed yet
        self.open_tb_type: str | None = None  # … the exception IPython's header named for it (`ModuleNotFoundError`)
        self.open_tb_line: int | None = None  # … its first line (the `Traceback` header, else its first frame)
        self.open_calls: list[str] = []  # … the function of each of those frames (`in main_process_first`)
        # … and where to read the source line printed under the innermost frame (the call that raised): read once,
        # at the end, only for a traceback left open (like a progress line's deferred time stamp)
        self.open_code_at: Callable[[], str] | None = None
        # … or, where the frames are a stack dump's (py-spy, faulthandler), its kind, whether the thread block being
        # read is the one kept (py-spy's MainThread, faulthandler's current or last thread), and the last line of it
        self.open_dump: str | None = None
        self.in_dump: str | None = None  # the kind of the dump whose thread block is being read (kept or not)
        self.dump_keep = False
        self.dump_current = False  # faulthandler's `Current thread` block was kept: a later block does not replace it
        self.dump_line = -10
        self.last_frame_line = -1
        self.last_error_line = -1  # the last line recorded as an error (a rule's or an unclassified one)
        self.joined_line = -1  # a line already read as part of the line above it (a C++ exception's `what():`)
        self.elastic: list[dict[str, Any]] = []  # torchrun's failure summary, one dict per failed worker
        self.elastic_section: str | None = None  # root / other: the section of the summary being read
        self.elastic_entry: dict[str, Any] | None = None
        self.elastic_line = -1  # the summary's last line read

    def add_anomaly(self, ev: dict[str, Any]) -> None:
        self.anomalies += 1
        if ev.get("severity") == "error":
            self.last_error_line = max(self.last_error_line, int(ev.get("line") or 0))
        if len(self.first_events) < KEEP_FIRST:
            self.first_events.append(ev)
        if len(self.recent_first) < KEEP_FIRST:
            self.recent_first.append(ev)
        else:
            self.recent.append(ev)

# Text copied out of a web page carries its typography: no-break spaces (U+00A0, `&nbsp;`) and ideographic
# spaces (U+3000) where the log had spaces, zero-width spaces (U+200B) inside words, typographic quotes (U+2018/
# U+2019/U+201C/U+201D) where it had ASCII ones, and, from a page's source,
# HTML character references (`&lt;`, `&quot;`, `&#39;`, `&#x27;`) where the log had `<`, `"`, `'`. Every rule's
# regex was written for the log's own bytes, so such text is read as the log had it (newlines untouched: a
# reference to a line break or another control character becomes a space, so the line numbers stay the file's).
# grep cannot do this: a file whose head has them is read by the Python engine.
WEB_CHARS = ((b"\xc2\xa0", b" "), (b"\xe3\x80\x80", b" "), (b"\xe2\x80\x8b", b""),
             # a blog's or a word processor's typographic quotes where the log had ASCII ones (`No module named ‘te’`)
             (b"\xe2\x80\x98", b"'"), (b"\xe2\x80\x99", b"'"), (b"\xe2\x80\x9c", b'"'), (b"\xe2\x80\x9d", b'"'))
ENTITY_RE = re.compile(rb"&(?:lt|gt|amp|quot|apos|nbsp|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});")
ENTITIES = {b"lt": b"<", b"gt": b">", b"amp": b"&", b"quot": b'"', b"apos": b"'", b"nbsp": b" "}
# Chinese documents and input methods put a full-width colon after an exception's class (`AssertionError：Torch not
# compiled with CUDA enabled`): read as Python wrote it
FW_COLON = b"\xef\xbc\x9a"
FW_COLON_RE = re.compile(rb"(Error|Exception|Warning)\xef\xbc\x9a ?")


def _entity(m: re.Match[bytes]) -> bytes:
    name = m.group(0)[1:-1]
    if name in ENTITIES:
        return ENTITIES[name]
    try:
        ch = chr(int(name[2:], 16) if name[1:2] in b"xX" else int(name[1:]))
    except (ValueError, OverflowError):
        return m.group(0)
    if ch.isspace() or not ch.isprintable():
        return b" "  # a line break or a control character: a space keeps the line count
    try:
        return ch.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return m.group(0)


def has_web_copy(data: bytes) -> bool:
    # every block of a big log passes here: an ASCII block (the common case, one fast pass) can hold only references;
    # the byte tests go before the regexes
    if b"&" in data and ENTITY_RE.search(data) is not None:
        return True
    if b"\x1b[" in data:  # a terminal's colour codes kept by a copy of raw output: they cut a line's words apart
        return True
    if data.isascii():
        return False
    return any(old in data for old, _new in WEB_CHARS) or (FW_COLON in data and FW_COLON_RE.search(data) is not None)


ANSI_BYTES_RE = re.compile(rb"\x1b\[[0-9;?]{0,32}[A-Za-z]")


def from_web_copy(data: bytes) -> bytes:
    if b"\x1b[" in data:
        data = ANSI_BYTES_RE.sub(b"", data)
    for old, new in WEB_CHARS:
        data = data.replace(old, new)
    if b"&" in data:
        data = ENTITY_RE.sub(_entity, data)
    return FW_COLON_RE.sub(rb"\1: ", data) if FW_COLON in data else data

# A paste copied out of a terminal (or a fixed-width page) is hard-wrapped: every long line cut at the same column,
# mid-word, so a phrase a rule needs can sit half on each line. The width is read from the text itself: the
# longest line length, reached by at least three different lines, at least one of them cut inside a word
# (word characters on both sides of the cut). Lines of that width are joined with the lines that continue them;
# the joined line takes the first line's place and empty lines the others', so every line number stays the file's.
WRAP_MIN = 60  # narrower "widths" are ordinary short lines
WRAP_MAX = 4 << 20  # a hard-wrapped paste is looked for up to this size (a bigger file is a log, not a paste)
NEW_RECORD_RE = re.compile(r"^\s*(?:\[?(?:ERROR|WARNING|INFO|DEBUG|CRITICAL|EXCEPTION|TRACE)\b|\[?\d{4}-\d{2}-\d{2}|Traceback "
                           r"|File \"|\[rank\d+\]|\(\w[\w ]{0,40}pid=\d+|[EWIF]\d{4} "
                           r"|[A-Za-z_][\w.]{0,80}(?:Error|Exception|Warning|Interrupt)(?::|$))")  # fmt: skip


def _continues(line: str, nxt: str) -> bool:
    """``nxt`` reads as the rest of ``line`` cut at a column: not blank, not a new record, not a line that starts as
    ``line`` does (records of one length: a table, a repeated message)."""
    return bool(nxt.strip()) and not NEW_RECORD_RE.match(nxt) and nxt[:8] != line[:8]


def _longest(head: bytes) -> tuple[list[str], int, list[int]] | None:
    """The head's whole lines, their greatest length (``WRAP_MIN`` or more) and the lines of that length that have a
    line after them; None for fewer than two lines or a narrower text."""
    lines = [ln.rstrip("\r") for ln in head.decode("utf-8", "replace").split("\n")[:-1]]
    if len(lines) < 2:
        return None
    width = max(len(ln) for ln in lines)
    if width < WRAP_MIN:
        return None
    return lines, width, [i for i, ln in enumerate(lines[:-1]) if len(ln) == width]


def _cut_width(lines: list[str], width: int, cut: list[int]) -> int | None:
    """wrap_width's reading of the longest lines (see above)."""
    if len(lines) < 4 or len({lines[i] for i in cut}) < 3:
        return None
    if 3 * sum(not _continues(lines[i], lines[i + 1]) for i in cut) > len(cut):
        # more than a third followed by a blank, a new record, or a line that starts as it does: records that share
        # a length. Fewer: a cut that fell before a word that starts a record (`[AIC_` | `INFO] args(0 …`), or one
        # line of the text that is the width by chance (`raise ValueError(…))` before `ValueError: …`): those lines
        # are not joined (dewrap)
        return None
    if not any(lines[i][-1:].isalnum() and lines[i + 1][:1].isalnum() for i in cut):
        return None
    return width


# A paste cut at its terminal's width where only one or two lines were long enough to be cut gives no width to read
# (the longest line is usually alone in any text). The weak reading takes the longest line's length as the width
# when every line of that length is followed by a line that continues it (not blank, not indented, not a new
# record): collect() rescans with it only when the first reading found no rule's error or warning, and keeps the
# rescan only if it finds one (bench/paste.py's `wrap` form).
def _weak_width(lines: list[str], width: int, cut: list[int]) -> int | None:
    """wrap_width_weak's reading of the longest lines (see above)."""
    if not cut:
        return None
    if any(not _continues(lines[i], lines[i + 1]) or lines[i + 1][:2] == "  " or lines[i + 1][:1] == "\t" for i in cut):
        return None  # the longest line followed by a new record, a blank or an indented line: a line, not a cut
    return width


def wrap_width(head: bytes) -> int | None:
    """The column a hard-wrapped paste was cut at, or None (read from the file's first bytes)."""
    got = _longest(head)
    return _cut_width(*got) if got else None


def wrap_width_weak(head: bytes) -> int | None:
    """The longest line's length, if the lines of that length read as cut at it (see above), else None."""
    got = _longest(head)
    return _weak_width(*got) if got else None


def wrap_widths(head: bytes) -> tuple[int | None, int | None]:
    """``(wrap_width, wrap_width_weak)`` of one head, its lines decoded once (the weak one only where the other is
    None: the scanner reads every file's head so)."""
    got = _longest(head)
    if got is None:
        return None, None
    width = _cut_width(*got)
    return width, None if width else _weak_width(*got)


# A rich console (Python's `rich` tracebacks: frames in a box of `│` lines the console's width) wraps its text lines at
# a word and drops the space there (`… train_batch_size is not` / `equal to micro_batch_per_gpu …`, round 76 c,
# starcoder-77): its cut lines are joined with a space, not glued as a terminal's mid-word cut is.
RICH_BOX = "│".encode()


def _word_wrapped(lines: list[bytes], width: int) -> bool:
    """The width is a rich console's: a line of it is a box line (`│ … │`)."""
    for ln in lines:
        t = ln.rstrip(b"\r")
        if t.startswith(RICH_BOX) and t.endswith(RICH_BOX) and len(t.decode("utf-8", "replace")) == width:
            return True
    return False


def dewrap(block: bytes, width: int) -> bytes:
    """Join the lines of ``block`` cut at ``width`` with their continuation lines, keeping the line count (with a
    space where the width is a rich console's, which wraps at words)."""
    lines = block.split(b"\n")
    sep = b" " if RICH_BOX in block and _word_wrapped(lines, width) else b""
    out: list[bytes] = []
    i = 0
    while i < len(lines):
        parts = [lines[i]]
        while i + len(parts) < len(lines):
            last = parts[-1].rstrip(b"\r").decode("utf-8", "replace")
            if len(last) != width or not _continues(last, lines[i + len(parts)].decode("utf-8", "replace")):
                break
            parts[-1] = parts[-1].rstrip(b"\r")
            parts.append(lines[i + len(parts)])
        out.append(sep.join(parts))
        out.extend([b""] * (len(parts) - 1))
        i += len(parts)
    return b"\n".join(out)

def _decode(raw: bytes, st: _FileState) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        st.non_utf8 += 1
        try:  # Chinese consoles write GB18030; a mixed file decodes line by line
            return raw.decode("gb18030")
        except UnicodeDecodeError:
            return raw.decode("utf-8", "replace")

def ts_before(read: Callable[[int, int], bytes], pos: int) -> tuple[float | None, str | None]:
    """The nearest time stamp before byte ``pos`` (for lines without their own stamp): 2 KiB back
    first, then 64 KiB. ``read(start, end)`` returns those bytes (of a block in memory, or of a file)."""
    for span in (2048, 65536):
        start = max(0, pos - span)
        last = None
        for last in TS_BYTES_RE.finditer(read(start, pos)):  # noqa: B007 — only the last one is wanted
            pass
        if last is not None:
            text = last.group(0).decode("ascii")
            return parse_ts(text), text
        if start == 0:
            break
    return None, None

TsLookup = Callable[[], tuple[float | None, str | None]]

FramesLookup = Callable[[], list[str]]
FRAME_RE = re.compile(rb'File "([^"\n]{1,300})", line \d+')
# ... and a title (an issue's one line) that joined a frame, its source line and the exception line: `File "…/
# distributed.py", line 578, in __init__ dist._verify_model_across_ranks(self.process_group, parameters) RuntimeError:
# NCCL error` (round 78 f, cmgan#40): the exception is read after the frame, at the same line
JOINED_EXC_RE = re.compile(r"\s(?P<exc>[A-Za-z_][\w.]{0,80}(?:Error|Exception): \S.*)$")
FRAME_LINE_RE = re.compile(r'^File "([^"\n]{1,300})", line \d+(?:, in (\S.{0,200}))?$')
# A stack dump of a process that is waiting (a hang report, round 77 d): py-spy's `Thread 46930 (idle): "MainThread"`
# (`Thread 0x7F… (active+gil): "MainThread"` with --native) then its frames innermost first, `    wait
# (torch/utils/file_baton.py:42)`; faulthandler's `Thread 0x00007f… (most recent call first):` (`Current thread …`
# for the thread that caught the signal) then `  File "…/x.py", line 42 in wait`, innermost first too. Read as a
# traceback without its exception line: the kept thread's innermost frames say where it waits.
DUMP_THREAD_RE = re.compile(r'^(?:Thread (?:0x[0-9A-Fa-f]{1,16}|\d{1,10}) \((?P<state>[\w+ ]{1,30})\)(?:: "(?P<name>[^"\n]{0,80})")?'
                            r"|(?P<current>Current )?[Tt]hread 0x[0-9A-Fa-f]{1,16} \(most recent call first\):?)\s*$")
PYSPY_FRAME_RE = re.compile(r"^\s{0,8}(?P<func>[^\s()][^()\n]{0,200}?) \((?P<path>[^()\n]{1,300}?)(?::(?P<line>\d{1,7}))?\)\s*$")
FAULTHANDLER_TIMEOUT_RE = re.compile(r"^Timeout \(\d{1,4}:\d\d:\d\d(?:\.\d{1,6})?\)!\s*$")
FAULTHANDLER_FRAME_RE = re.compile(r'^\s{0,4}File "(?P<path>[^"\n]{1,300})", line (?P<line>\d{1,7}) in (?P<func>\S.{0,200})$')
# IPython's frame lines (read only inside a traceback IPython's header opened) and its arrow at the raising line
IPYTHON_FRAME_RE = re.compile(r"^(?:\[?(?P<path>[^\s\[\]()]{1,300}\.py)\]?(?:\([^)\s]{0,600}\))?(?::\d{1,7},)? in "
                              r"(?P<func>\S.{0,200})|File (?P<path8>\S{1,300}\.py):\d{1,7}, in (?P<func8>\S.{0,200})|"
                              r"(?P<cell>Cell In\[\d{1,6}\], line \d{1,7}|<(?:ipython-input-[^>\s]{1,60}|timed exec|string)> "
                              r"in \S.{0,200}))$")
# rich's frame line inside its traceback box (read only inside a traceback a header opened): the file, its line and
# the function (`│ E:\\kohya_ss\\sdxl_train.py:746 in <module>   │`; a long path pushes the function to the next box line)
RICH_FRAME_RE = re.compile(r"^│ (?P<path>[^│\s][^│]{0,300}?\.pyx?):\d{1,7} in(?: (?P<func>[^│\s]{1,200}))?\s*│\s*$")
IPYTHON_ARROW_RE = re.compile(r"^-{1,4}> ?\d{1,7} (?P<code>\S.{0,300})$")
# … and the types whose name in IPython's header says no more than the frames (read_open_raise)
GENERIC_EXCEPTIONS = frozenset({"Exception", "Error", "RuntimeError", "ValueError", "TypeError", "OSError", "IOError",
                                "AssertionError", "AttributeError", "IndexError", "NotImplementedError", "SystemExit"})
# The exception line under a traceback's frames when its name ends in no Error / Exception / Interrupt / Exit (which
# logformats.PY_EXC_RE reads anywhere): Python prints `module.Name: message` (`zipfile.BadZipFile: File is not a zip
# file`, `concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly …`,
# `filelock._error.Timeout: The file lock … could not be acquired.`) or a builtin's bare name (`StopIteration`). Read
# only within three lines of the last frame (its source line and 3.11's `^^^^` markers between): elsewhere such a
# line is a logger's name or prose.
OTHER_EXC_RE = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)+[A-Z]\w*|StopIteration|StopAsyncIteration|GeneratorExit)"
                          r"(?:: (?P<msg>.*)|\s*)$")
# NCCL's own INFO level (`host:pid:tid [dev] NCCL INFO …`): NCCL reports its errors as `NCCL WARN`; an INFO line with
# an error word (the optional net plug-in's probe `Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open
# shared object file`, `NET/IB : No device found.`) is no error of a plain paste (round 78 e, wenet#2511: ENV099 headed
# the probe). A rule that knows such a line still reads it.
NCCL_INFO = "] NCCL INFO "
TRACEBACK_BYTES = b"Traceback (most recent call last)"
MAX_FRAMES = 4


def frames_before(read: Callable[[int, int], bytes], pos: int) -> list[str]:
    """The innermost frames (source paths, innermost last) of the traceback just above byte ``pos``: where an
    exception was raised says which subsystem raised it (`datasets/builder.py`, `torch/distributed/…`)."""
    window = read(max(0, pos - 8192), pos)
    start = window.rfind(TRACEBACK_BYTES)
    if start >= 0:
        window = window[start:]
    paths = [m.group(1).decode("utf-8", "replace") for m in FRAME_RE.finditer(window)]
    return paths[-MAX_FRAMES:]

BannerLookup = Callable[[], dict[str, str]]

def _loss_value(v: str | None) -> float | None:
    """A progress line's loss as a number (`2.31`, `1.084016E+01`, mindformers' `[2.31`, `nan`, `inf`)."""
    try:
        return float(v.strip("[] ")) if v else None
    except ValueError:
        return None

def _progress(st: _FileState, rule: Rule, lineno: int, text: str, ts: float | None, ts_text: str | None,
              groups: dict[str, str], lookup: TsLookup | None) -> dict[str, Any]:  # fmt: skip
    step = int(groups["step"]) if (groups.get("step") or "").isdigit() else None
    ev = _event(rule.id, "progress", rule.severity.value, lineno, text.strip(), ts, ts_text,
                {k: v for k, v in groups.items() if v is not None}, step=step)  # fmt: skip
    if lookup is not None:
        ev["_lookup"] = lookup  # resolved for the first and last progress line only (resolve_progress)
    if st.progress_last is None or st.progress_last["line"] != lineno:
        st.progress_count += 1
        loss = _loss_value(groups.get("loss"))
        if loss is not None:
            if st.loss_seen % st.loss_stride == 0:
                st.losses.append([step, loss, lineno])
                if len(st.losses) >= LOSS_POINTS:
                    st.losses, st.loss_stride = st.losses[::2], st.loss_stride * 2
            st.loss_seen += 1
    if st.progress_first is None:
        st.progress_first = ev
    st.progress_last = ev
    st.recent.clear()
    st.recent_first = []
    return ev


# The statement a cut traceback stops at, when it raises an exception with a literal message (`raise
# ValueError(f"SafeTensorError::InvalidOffset({key})")`, mindnlp#2054): the paste ends before the exception line, but
# the innermost frame's own source says which exception it raised and, but for the `{…}` fields, its message.
RAISE_LITERAL_RE = re.compile(r"^raise\s+(?P<type>[A-Za-z_][\w.]{0,80}(?:Error|Exception|Exit|Interrupt))\(\s*"
                              r"(?P<args>[fFrRbB]{0,2}[\"\'].{3,300})")
# its message: the string literals at the start of the argument, adjacent ones joined as Python joins them
# (`raise RuntimeError("trying to initialize the default process group " "twice!")`, torch's distributed_c10d.py)
RAISE_STRING_RE = re.compile(r"\s*[fFrRbB]{0,2}(?:\"(?P<d>[^\"\n]{0,300})\"|\'(?P<s>[^\'\n]{0,300})\')")
RAISE_CALL_FIELD_RE = re.compile(r"\{[^{}]{0,120}\(")


def raise_literal(code: str) -> tuple[str, str] | None:
    """(exception type, message) of a source line `raise X("literal" …)`, the `{…}` fields of an f-string kept as
    written; None for another line, or a message whose fields call a function (which may have raised first, in a
    frame below). A literal cut before its closing quote (the line was shortened) is taken as far as it goes."""
    m = RAISE_LITERAL_RE.match(code)
    if m is None:
        return None
    args, parts, pos = m["args"], [], 0
    while True:
        lit = RAISE_STRING_RE.match(args, pos)
        if lit is None:
            break
        parts.append(lit["d"] if lit["d"] is not None else lit["s"])
        pos = lit.end()
    if not parts:  # an unclosed literal: the source line was cut
        parts = [args.lstrip("fFrRbB")[1:]]
    msg = "".join(parts).strip()
    if len(msg) < 3 or RAISE_CALL_FIELD_RE.search(msg):
        return None
    return m["type"], msg


def _ends_in_traceback(st: _FileState) -> bool:
    """The file so far ends inside a traceback's frames: no exception line, and no error line after them."""
    return st.open_tb_line is not None and bool(st.open_frames) and st.last_error_line <= st.last_frame_line


def read_open_raise(st: _FileState, spec: ScanSpec) -> None:
    """A file that ends inside a traceback whose innermost frame's source line raises an exception with a literal
    message: that exception is read as the traceback's exception line (at the source line's number), so the rules
    and the fallback read its type and message; the verdict is no longer "incomplete traceback"."""
    if not _ends_in_traceback(st):
        return
    code = _source_under(st.open_code_at)
    raised = raise_literal(code)
    if raised is None:
        if st.open_tb_type is not None and st.open_tb_type.rsplit(".", 1)[-1] not in GENERIC_EXCEPTIONS:
            # IPython's header named the exception: the error, at the header's line (a built-in generic type says no
            # more than the cut traceback: its frames are read as one, and a title beside it still reads)
            text = f"{st.open_tb_type}{IPYTHON_HEADER_NOTE}"
            st.add_anomaly(_event(None, "unclassified", "error", st.open_tb_line or 0,
                                  text + (f" at `{code}`" if code else ""), None, None, exc_type=st.open_tb_type,
                                  frames=list(st.open_frames) or None))  # fmt: skip
            st.exceptions.append({"type": st.open_tb_type, "message": "", "line": st.open_tb_line,
                                  "after_traceback": True, "sections": {}})  # fmt: skip
        return
    lineno = st.last_frame_line + 1
    _handle_line(st, spec, f"{raised[0]}: {raised[1]}", lineno, lambda: (None, None), lambda: {}, lambda: False, None)


def resolve_progress(st: _FileState) -> None:
    """Give the first and last progress lines the time of the nearest stamped line before them."""
    for ev in (st.progress_first, st.progress_last):
        if ev is not None and "_lookup" in ev:
            ev["time"], ev["ts"] = ev.pop("_lookup")()

def _handle(st: _FileState, spec: ScanSpec, text: str, lineno: int, ts_lookup: TsLookup,
            banner_lookup: BannerLookup, next_is_rule: Callable[[], bool],
            next_line: Callable[[], str] | None = None, frames_lookup: FramesLookup | None = None) -> None:  # fmt: skip
    """One candidate line as pasted: a JSON/repr string holding several lines is split at its literal
    ``\\n``; each line loses the prefixes a launcher or a paste put in front (``[rank1]:``, Ray's
    ``(pid=…)``, ANSI colour, a time stamp) unless the line already fits a known grammar as it is."""
    if text.endswith("\r"):  # CRLF files (pasted from Windows): `$` in a rule must still match
        text = text.rstrip("\r")
    if text[:1] == ".":
        m = PROGRESS_DOTS_RE.match(text)
        if m:  # a progress printer's dots with no newline before the line (`.[rank0]:[E903 …] RopeOperation setup failed!`)
            text = text[m.end():]
    if SOURCE_ECHO_RE.match(text):
        return  # the source line a traceback quotes under its frame, not a message
    if lineno == st.joined_line:
        return  # the `what():` line of the C++ exception above, already joined to it
    pieces = split_embedded_at(text)
    if len(pieces) == 1 and len(pieces[0][1]) >= FLAT_MIN:
        pieces = split_flattened_at(pieces[0][1])  # a paste whose line breaks were lost: its records, one by one
    last = 0
    for at, piece in pieces:
        if at - last > 1 and st.specific_line == lineno:
            st.specific_line = lineno - 2  # a blank line of the string ended the detail of the rule read above it
        last = at
        rank: int | None = None
        level_error = False
        prefix_level: str | None = None
        raw: str | None = None  # the line with the prefixes stripped below, for a rule written with them in it
        if parse_line(piece).grammar == "plain" or piece[:1] in " \t\x1b":
            pre = strip_prefix_info(piece)
            prefix_level = pre.level
            level_error = pre.level in ("ERROR", "CRITICAL") or bool(LEVEL_PREFIX_ERROR_RE.match(piece))
            if not level_error and pre.level is None and TOOL_ERROR_RE.match(pre.text):
                level_error = True  # a compiler's or a linker's own `error:`, in any grammar
                if spec.paste:
                    st.recognised += 1
            if not level_error and CRASH_LINE_RE.match(pre.text):
                level_error = True  # a process killed by a signal: an error in any grammar
                if spec.paste:  # alone it makes no known grammar (the plain-paste reading decides the rest)
                    st.recognised += 1
            if (spec.paste and not level_error and pre.level is None
                    and (PASTE_ERROR_RE.search(pre.text) or ISSUE_TITLE_RE.match(piece))
                    and not RAISE_OPEN_RE.search(pre.text)
                    and NCCL_INFO not in pre.text
                    and not _command_without_error(pre.text)
                    and not (spec.mixed and (LEVEL_WORD_RE.search(pre.text, 0, LEVEL_WORD_SPAN)
                                             or PY_WARNING_RE.search(pre.text)
                                             or not MIXED_ERROR_RE.search(pre.text)))):
                level_error = True  # a plain paste: a line with error words is the error
                st.recognised += 1
            prose = piece[: len(piece) - len(pre.text)] if pre.text and piece.endswith(pre.text) else ""
            if prose and CJK_RE.search(prose):
                _prose_context(st, spec, prose, lineno, ts_lookup)
            if pre.text != piece:
                raw = piece
            piece, rank = pre.text, pre.rank
            if pre.level is not None:  # a log line by its prefix (glog, MindIE, vLLM …) even if its message is not
                st.recognised += 1
        if rank is not None:
            st.prefix_ranks[rank] = st.prefix_ranks.get(rank, 0) + 1
        if _elastic(st, piece, lineno):
            continue
        _handle_line(st, spec, piece, lineno, ts_lookup, banner_lookup, next_is_rule, rank, next_line, level_error,
                     frames_lookup, prefix_level, raw)
        if len(pieces) > 1:  # a later line of the same string without a stamp of its own has this one's
            rec = parse_line(piece)
            if rec.time is not None:
                ts_lookup = _stamp(rec.time, rec.ts_text)

# The prose a paste puts before an embedded exception (an issue title: `使用HyperParallel进行LlamaFactory FSDP2 …
# sft报错RuntimeError: Environment variables RANK_ID has not been exported`) is stripped as a prefix before the line
# is matched (the error is what follows it); the info rules (context, never a verdict) still read it, so a check can
# pair the error with the stack the user names (ENV883 with ENV884's HyperParallel).
CJK_RE = re.compile(r"[\u3400-\u9fff]")


def _prose_context(st: _FileState, spec: ScanSpec, prose: str, lineno: int, ts_lookup: TsLookup) -> None:
    for sm in spec.sigs.match(prose):
        if sm.rule.severity.value != "info":
            continue
        ts, ts_text = ts_lookup()
        _tally(st, sm.rule.id, _event(sm.rule.id, sm.rule.role, "info", lineno, prose.strip(), ts, ts_text, sm.groups),
               sm.groups, None)  # fmt: skip


def _tally(st: _FileState, rule_id: str, ev: dict[str, Any], groups: dict[str, str], pid: int | None) -> None:
    """Count one line of a rule in the file's hits: first and last line, the values parsed, the writers."""
    h = st.hits.get(rule_id)
    if h is None:
        h = st.hits[rule_id] = {"count": 1, "first": ev, "last": ev, "pids": {}}
    else:
        h["count"] += 1
        h["last"] = ev
    if not ev.get("logged_as"):
        h["loud"] = True  # one line of the rule logged as an error is enough for the rule's own severity
    vals = h.setdefault("values", {})  # every value the rule's lines parsed, first seen (not only the first line's)
    for k, v in groups.items():
        if v and k not in vals and len(vals) < 16:
            vals[k] = str(v)[:200]
    key = str(pid if pid is not None else -1)  # a console echoes its workers' lines: count by writer
    if key in h["pids"] or len(h["pids"]) < 64:
        h["pids"][key] = h["pids"].get(key, 0) + 1


def _stamp(ts: float, ts_text: str | None) -> TsLookup:
    return lambda: (ts, ts_text)


# vLLM's `ERROR 05-15 11:58:24 [engine.py:448] message` (after an optional Ray `(… pid=N)`): the prefix is
# stripped before matching, but its level still says the line is an error. A message indented after the
# prefix is a traceback frame or a quoted source line, not the error.
LEVEL_PREFIX_ERROR_RE = re.compile(r"^\s*(?:\([^()]{0,200}\)\s?)?(?:ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                                   r"\[[\w./-]{1,200}:\d{1,7}\] (?=[^\s])")
CODE_HINT_RE = re.compile(r"\bE[0-9A-Z]\d{4}\b")
# A message cut right after a separator, its rest on the next line: a paste wrapped by hand or by a browser
# (Paddle's `… with error: /usr/local/Ascend/…/libtbe_adapter.so: ` then `undefined symbol: _ZN3Mki…`).
OPEN_TAIL_RE = re.compile(r":[\s`]*$")
# The level a line was logged at, where the line itself says it without a grammar or prefix that carries
# it: MindSpore Lite's `WARNING [mindspore/lite/src/lite_model.cc:61] ConstructModel] …`, a bare `WARNING: …`
# / `Warning: …`, Python's warnings (`…/x.py:79: UserWarning: …`), `[W] …`.
BARE_LEVEL_RE = re.compile(r"^\s*(?:(?P<word>WARNING|WARN|INFO|DEBUG|Warning)(?::\s|\s+\[[\w./*-]+:[\d*]+\]\s)|"
                           r"\[(?P<short>[WID])\]\s|[^\s:]{1,300}:\d{1,7}: (?P<pywarn>[A-Z]\w{0,40}Warning): )")
# Only a warning demotes an error rule's line: an INFO line carries values (a `loss: nan` in a progress line,
# vLLM's `Available memory: 0`) whose meaning does not depend on the level the logger gave them.
QUIET_LEVELS = frozenset({"WARNING"})
# A CANN error message relayed under a warning print: torch_npu's c10 warning `[W424 03:40:28.559765110
# compiler_depend.ts:432] Warning: EI0003: [PID: 143] … In [CheckDataType], value [bfloat16] …` hands on the
# message an HCCL/ACL call left in the error queue, after the `… the current working operator name is
# HcclAllreduce` report it explains. A CANN code states its own level (E… error, W… warning): an E-code message
# is an error whatever the print around it says (vllm-ascend#641).
RELAYED_CANN_ERROR_RE = re.compile(r"^\s*(?:Warning:\s*)?E[0-9A-Z]\d{4}(?::\s|\[PID|\s\[PID)")


def line_level(rec: LogRecord, prefix_level: str | None, text: str) -> str | None:
    """The level the writer gave this line: its grammar's (MindSpore, plog, torch_npu, Python logging), a
    prefix's (vLLM, glog, c10, MindIE …), or its own leading word; None when nothing says. A CANN error code's
    message relayed under a warning print keeps no level (RELAYED_CANN_ERROR_RE): its code says it is an error."""
    if rec.level:
        return rec.level.upper()
    if prefix_level:
        if prefix_level == "WARNING" and RELAYED_CANN_ERROR_RE.match(text):
            return None
        return prefix_level
    m = BARE_LEVEL_RE.match(text)
    if m is None:
        return None
    if m["pywarn"]:
        return "WARNING"
    if m["word"] == "Warning" and RELAYED_CANN_ERROR_RE.match(text):
        return None  # `Warning: EI0003: …` without the c10 prefix: the relayed CANN error keeps its code's level
    word = (m["word"] or m["short"] or "").upper()
    return {"WARN": "WARNING", "W": "WARNING", "I": "INFO", "D": "DEBUG"}.get(word, word)
# The dots a progress printer writes without a newline (vLLM-Ascend's graph compile, torch_npu's op compile: `....`),
# glued to the next line a process prints: `.[rank0]:[E903 07:21:23.263967696 compiler_depend.ts:429] RopeOperation
# setup failed!`, `..[ERROR] the socversion …`, `......ERROR 02-11 11:32:58 engine.py:389] …` (7 corpus cases); only
# before a bracket, a parenthesis or a capital, so `./run.sh` and `.so` stay as they are
PROGRESS_DOTS_RE = re.compile(r"^\.{1,400}(?=[\[(A-Z])")
TB_HEADER = "Traceback (most recent call last):"  # a line that ends in it opens the traceback its exception ends
# The indented source line a Python traceback quotes under a frame (`    raise ValueError("The file {} does
# not exist …".format(f))`) holds a message template, not a message: no rule reads it. Only candidate
# lines reach the state machine, so it is known by its own shape: indented, a statement that raises or logs.
SOURCE_ECHO_RE = re.compile(r'^\s{2,}(?:raise \w[\w.]{0,80}\(|(?:logger|logging|log|LOG)\.\w{1,20}\(|print\(|'
                            r'(?:raise )?\w{1,40}(?:Error|Exception)\((?:f?["\']))')

def _unwrap(spec: ScanSpec, text: str, matches: list[Any], next_line: Callable[[], str]) -> tuple[str, list[Any]]:
    """A message a browser or terminal broke over two lines: when this error line matches no rule (or only a
    generic code family), the line joined with the next one is tried; a specific rule there wins."""
    nxt = next_line().strip()
    if not nxt or nxt.startswith("[") or parse_line(nxt).grammar != "plain":
        return text, matches
    have = {m.rule.id for m in matches}
    values = sum(len(m.groups) for m in matches)
    for joiner in (" ", ""):
        joined = text.rstrip() + joiner + nxt
        found = spec.sigs.match(joined)
        # the code's own message on the next line says the platform or package lacks the op (`EE9999: Inner
        # Error!` then `EE9999: [PID: 1] … feature not support`): the joined line reads as the environment
        said = any("unsupported" in m.groups for m in found) and any(m.groups.get("family_code", "?") in nxt for m in matches)
        if {m.rule.id for m in found} - have - spec.sigs.generic_ids or (
            have and have <= {m.rule.id for m in found} and sum(len(m.groups) for m in found if m.rule.id in have) > values
        ) or (said and not any("unsupported" in m.groups for m in matches)):
            return joined, found
    return text, matches

def _incomplete(spec: ScanSpec, matches: list[Any]) -> bool:
    """Only generic code-family matches, or specific ones that captured none of the values they name."""
    return all(m.rule.id in spec.sigs.generic_ids or (not m.groups and any(sg.groups for sg in m.rule.signatures))
               for m in matches)  # fmt: skip

def _handle_line(st: _FileState, spec: ScanSpec, text: str, lineno: int, ts_lookup: TsLookup,
                 banner_lookup: BannerLookup, next_is_rule: Callable[[], bool], prank: int | None,
                 next_line: Callable[[], str] | None = None, level_error: bool = False,
                 frames_lookup: FramesLookup | None = None, prefix_level: str | None = None,
                 raw: str | None = None) -> None:  # fmt: skip
    """One candidate line. ``ts_lookup`` finds the nearest earlier time stamp for lines without one (progress
    lines defer it to the end of the file); a progress line seen before with other numbers takes a fast path.
    ``raw``: the line before its prefixes were stripped (``text`` is what is left), when any were."""
    key = _DIGITS.sub("", text)
    fast = st.progress_shapes.get(key)
    if fast is not None:  # a per-step line seen before with other numbers: only its step matters
        m = fast[1].search(text)
        if m is not None:
            st.recognised += 1
            _progress(st, fast[0], lineno, text, None, None, m.groupdict(), ts_lookup)
            return
    rec = parse_line(text)
    if rec.grammar == "plain" and st.open_frames and st.open_tb_line is not None and 0 < lineno - st.last_frame_line <= 3:
        om = OTHER_EXC_RE.match(text)
        if om is not None:  # the traceback's exception line, whatever the shape of its name (OTHER_EXC_RE)
            rec = LogRecord("python-exc", om["msg"] or "", "ERROR", exc_type=om["type"])
    ts, ts_text = rec.time, rec.ts_text
    if rec.pid is not None:
        st.pids[rec.pid] = st.pids.get(rec.pid, 0) + 1
    if ts is None and TS_IN_LINE in text:  # CANN's `EI0002: [PID: 1] 2025-…-02:16:03.427.598 …` carries its own stamp
        m = TS_RE.search(text)
        if m:
            ts, ts_text = parse_ts(m.group(0)), m.group(0)
    own_ts = ts is not None
    lazy = ts is None and PROGRESS_HINT in text  # progress lines: the time is looked up once, at the end
    if ts is None and not lazy:
        ts, ts_text = ts_lookup()
    if CLUSTER_UP in text and st.cluster_up is None:
        st.cluster_up = ts
    if next_line is not None and rec.grammar == "python-exc" and rec.exc_type and rec.message == text:
        text, rec = _join_what(st, text, rec, lineno, next_line)
    matches = spec.sigs.match(text)
    if raw is not None:
        # A rule whose pattern holds what the prefix stripping took off (torch_npu's `[E410 … compiler_depend.ts:418]
        # setup failed!`, pip's `ERROR: LeakSanitizer: …`, `error: Failed to compile BiShengLIR`): its fixture line
        # fires on the whole line, so the scanner reads the whole line too (rules the message already fired keep
        # the message's match)
        have = {m.rule.id for m in matches}
        extra = [m for m in spec.sigs.match(raw) if m.rule.id not in have]
        if extra:
            matches = [*matches, *extra]
    if next_line is not None and _incomplete(spec, matches) and (
        matches or rec.is_error or BARE_ERROR_RE.match(text) or CODE_HINT_RE.search(text) or OPEN_TAIL_RE.search(text)
    ):
        joined, matches = _unwrap(spec, text, matches, next_line)
        if joined is not text and not own_ts and TS_IN_LINE in joined:
            # the stamp is on the joined line (`call aclnnX failed, detail:E39999: Inner Error!` then
            # `E39999: [PID: 1] 2025-…-12:09:01.468.164 …`): the event has that line's time, not an earlier one
            m = TS_RE.search(joined)
            if m:
                ts, ts_text = parse_ts(m.group(0)), m.group(0)
        text = joined
    generic = spec.sigs.generic_ids
    if matches and rec.grammar == "plain" and all(m.rule.id in generic for m in matches) and lineno - st.specific_line <= 1:
        # The next lines of a message a catalogue rule already read are that rule's detail, not a new fault:
        # after an error (`rtStreamSynchronize… execute failed` then `… runtime result = 507011`), or a CANN
        # block that opens with an internal catch-all right under the line it explains (torch_npu's
        # `ERR02200 DIST call hccl api failed` then `EH9999: Inner Error!` / `EH9999: … runtime result = 207000`).
        if st.specific_error or st.in_block or (st.specific_umbrella and any(_internal_code(m.groups) for m in matches)):
            matches = []
            st.specific_line, st.in_block = lineno, True
    elif any(m.rule.id not in generic and m.rule.severity.value != "info" and m.rule.role != "progress" for m in matches):
        st.specific_line, st.in_block = lineno, False
        st.specific_error = any(m.rule.id not in generic and m.rule.severity.value == "error" for m in matches)
        # a wrapper that says only that a call failed (torch_npu's ERR02200, a consequence): the CANN block under it is its detail
        st.specific_umbrella = any(m.rule.id not in generic and m.rule.role == "consequence" for m in matches)
    if matches or rec.grammar != "plain":
        st.recognised += 1
    classified = False
    echo = None  # True: only an info rule that knows the line as an echo of an error matched it
    known = False  # an info rule knows the line (SGLang's import guard on NPU): its error words are not an error
    benign = False  # a benign rule knows the line (MindSpore's GetRealPath for a notebook cell): no error even at ERROR
    level = line_level(rec, prefix_level, text) if matches else None  # only a rule's line needs its level
    quiet = level in QUIET_LEVELS
    for sm in matches:
        rule = sm.rule
        if rule.role == "progress":
            ev = _progress(st, rule, lineno, text, ts, ts_text, sm.groups, None if ts is not None else ts_lookup)
            if rule.severity.value == "info":
                if len(matches) == 1 and rec.grammar == "plain" and len(st.progress_shapes) < 1024:
                    rx = next((sg.regex for sg in rule.signatures if sg.regex.search(text)), None)
                    if rx is not None:
                        st.progress_shapes[key] = (rule, rx)
                continue  # plain progress; a progress rule with a severity (e.g. overflow) is also a hit
            ev = dict(ev, pid=rec.pid)
        else:
            role = _code_role(sm.groups) or rule.role
            severity = rule.severity.value
            if severity == "error" and quiet:
                severity = "warning"  # the program itself logged the line as a warning: not what stopped it
            ev = _event(rule.id, role, severity, lineno, text.strip(), ts, ts_text, sm.groups, pid=rec.pid,
                        logged_as=level if quiet else None)
            if prank is not None:
                ev["prank"] = prank
        _tally(st, rule.id, ev, sm.groups, rec.pid)
        if rule.severity.value != "info" and ev.get("role") in ("root", "consequence"):
            classified = True
            st.add_anomaly(ev)
        elif ev.get("role") == "consequence":
            echo = True  # a line a rule knows as the echo of an error reported elsewhere (torch_npu's `The Inner error
            # is reported as above … operator name is MatMul`): its words are not an error's to classify by keyword
        if rule.severity.value == "info":
            known = True
            benign = benign or rule.benign
        elif ev.get("role") == "info":
            known = True  # a rule of role info (a statement it reads, heading only alone: nccl-tests' `… cannot reach
            # the theoretical bandwidth` title, PERF023) knows the line: its words are not an unrecognised error's
    if rec.grammar == "traceback":
        st.last_traceback = lineno
        st.open_frames, st.open_tb_line, st.open_calls, st.open_code_at = [], lineno, [], None
        st.open_tb_type, st.open_dump = rec.exc_type, None
        return
    if rec.grammar == "plain" and st.open_tb_line is not None and text.startswith("│"):
        rm = RICH_FRAME_RE.match(text)
        if rm is not None:  # rich's frame in its box: the file and the function
            _add_frame(st, rm["path"], rm["func"], lineno, None)
            return
    if rec.grammar == "plain" and st.open_tb_type is not None and st.open_tb_line is not None:
        im = IPYTHON_FRAME_RE.match(text)
        if im is not None:  # IPython's frame: the file (or the cell) and the function
            _add_frame(st, im["path"] or im["path8"] or im["cell"], im["func"] or im["func8"], lineno, None)
            return
        am = IPYTHON_ARROW_RE.match(text)
        if am is not None:  # `----> 7 import dgl`: the line of the frame above that raised
            code = am["code"].strip()
            st.open_code_at = lambda: code
            st.last_frame_line = lineno
            return
    if rec.grammar == "plain" and _read_dump(st, text, lineno):
        return
    if rec.grammar == "plain":
        fm = FRAME_LINE_RE.match(text)
        if fm is not None:  # a traceback frame (`File "…/x.py", line 12, in f`): where the exception was raised
            if st.open_dump is not None:  # a traceback's frames after a stack dump: a traceback of its own
                st.open_frames, st.open_tb_line, st.open_calls, st.open_dump = [], None, [], None
            if st.open_tb_line is None:
                st.open_tb_line = lineno  # a paste that starts inside the frames
            # the line under the frame (the call it was making) is read if the traceback stays open
            _add_frame(st, fm.group(1), fm.group(2), lineno, next_line)
            jm = JOINED_EXC_RE.search(fm.group(2) or "")
            if jm is not None and not classified:  # a title that joined frame, source and exception line in one
                _handle_line(st, spec, jm.group("exc"), lineno, ts_lookup, banner_lookup, next_is_rule, prank,
                             None, level_error, frames_lookup, prefix_level, None)
            return
    if rec.grammar == "python-exc" and rec.exc_type == "KeyboardInterrupt" and not rec.message.strip() and not classified:
        # Ctrl-C: a bare `KeyboardInterrupt` ends the traceback Python prints when the user stops a process, most
        # often one that seemed stuck (nanodet#194, pytorch#19258: a DataLoader's `_try_get_data`): its frames say
        # where the process was, as a stack dump's do (a hang report, not a fault); alone, the line says nothing
        if st.open_frames and st.open_tb_line is not None:
            st.open_dump, st.open_tb_type = "Ctrl-C", None
        return
    if rec.grammar == "python-exc" and not classified and st.open_frames and len(rec.message.strip()) >= 8:
        # an exception line cut short (`RuntimeError: trying to initial`, the store's excerpt of diffusers#2221)
        # under the frame whose source raises it in full: read the whole message from the raise statement
        raised = raise_literal(_source_under(st.open_code_at))
        cut = rec.message.strip()
        if (raised is not None and raised[0].rsplit(".", 1)[-1] == (rec.exc_type or "").rsplit(".", 1)[-1]
                and len(raised[1]) > len(cut) and raised[1].startswith(cut)):
            _handle_line(st, spec, f"{rec.exc_type}: {raised[1]}", lineno, ts_lookup, banner_lookup, next_is_rule,
                         prank, next_line, level_error, frames_lookup, prefix_level, raw)
            return
    if rec.grammar == "python-exc":
        banner = banner_lookup() if not rec.message.strip() or next_is_rule() else {}
        exc = {"type": rec.exc_type, "message": rec.message.strip()[:MAX_TEXT], "line": lineno,
               "after_traceback": st.last_traceback is not None and lineno - st.last_traceback < 400,
               "sections": {k: v[:MAX_TEXT] for k, v in banner.items()}}  # fmt: skip
        st.exceptions.append(exc)
        open_frames = st.open_frames
        st.open_frames, st.open_tb_line, st.open_calls, st.open_code_at = [], None, [], None  # the exception closes it
        st.open_tb_type, st.open_dump = None, None
        if not classified:
            body = rec.message.strip() or _banner_body(banner)
            frames = list(open_frames) or (frames_lookup() if frames_lookup is not None and exc["after_traceback"] else None)
            st.add_anomaly(_event(None, "unclassified", "error", lineno, f"{rec.exc_type}: {body}".strip(),
                                  ts, ts_text, exc_type=rec.exc_type or "", prank=prank, frames=frames or None,
                                  echo=echo))  # fmt: skip
        return
    if not classified and not benign and (rec.level in ("ERROR", "CRITICAL", "EXCEPTION") or BARE_ERROR_RE.match(text)
                           or (level_error and rec.grammar == "plain" and not SOURCE_ECHO_RE.match(text)
                               and lineno != st.last_frame_line + 1  # not the source line under a frame
                               and not (known and spec.paste)  # a paste's word, on a line an info rule knows
                               and not text.rstrip().endswith(TB_HEADER))):  # `… hit an exception: Traceback (…):`
        st.add_anomaly(_event(None, "unclassified", "error", lineno, text.strip(), ts, ts_text, prank=prank, echo=echo))

def _command_without_error(text: str) -> bool:
    """A pasted command line whose error words are all in its options, assignments and paths (`--timeout 20`)."""
    words = command_words(text)
    return words is not None and not PASTE_ERROR_RE.search(words)


def _elastic(st: _FileState, text: str, lineno: int) -> bool:
    """A line of torchrun's failure summary, read into ``st.elastic``; True when the line was one."""
    m = ELASTIC_HEAD_RE.match(text)
    if m is not None:
        st.recognised += 1
        st.elastic_section, st.elastic_entry, st.elastic_line = ("root" if m["root"] else "other"), None, lineno
        return True
    if st.elastic_section is None or lineno - st.elastic_line > ELASTIC_GAP:
        return False
    m = ELASTIC_ROW_RE.match(text)
    if m is None:
        return False
    entry = st.elastic_entry
    if entry is None or m["key"] in entry or lineno - st.elastic_line > 2:
        # the first row of an entry (its `[N]:` line above is no candidate): a row name the entry already has
        # starts the next one; a row far from the summary's last line belongs to no entry
        if entry is not None and lineno - st.elastic_line > ELASTIC_ROWS:
            st.elastic_section = None
            return False
        if len(st.elastic) >= MAX_ELASTIC:
            st.elastic_entry = None
            return False
        entry = st.elastic_entry = {"section": st.elastic_section, "line": lineno}
        st.elastic.append(entry)
    st.recognised += 1
    st.elastic_line = lineno
    key, value = m["key"], m["value"]
    entry[key] = value[:MAX_TEXT]
    if key == "rank":
        r = ELASTIC_RANK_RE.match(value)
        if r is None:  # numbers only: a value torch did not write is kept as no rank
            del entry[key]
            return True
        entry["rank"] = int(r["rank"])
        if r["local"] is not None:
            entry["local_rank"] = int(r["local"])
    elif key == "exitcode":
        x = ELASTIC_EXIT_RE.match(value)
        if x is None:
            del entry[key]
            return True
        entry["exitcode"] = int(x["code"])
        if x["pid"] is not None:
            entry["pid"] = int(x["pid"])
        if entry["exitcode"] < 0:  # a worker killed by a signal exits with minus its number
            entry.setdefault("signal", -entry["exitcode"])
            entry.setdefault("signal_name", _signal_name(-entry["exitcode"]))
    elif key == "traceback":
        entry["traceback_line"] = lineno
        sig = ELASTIC_SIGNAL_RE.match(value)
        if sig is not None:
            entry["signal"], entry["signal_name"] = int(sig["sig"]), sig["name"]
            return True
        return False  # a child's own traceback (`traceback : Traceback (most recent call last):`) is read as usual
    elif key == "error_file" and value in ("<N/A>", ""):
        del entry[key]
    return True


def _signal_name(n: int) -> str | None:
    import signal

    try:
        return signal.Signals(n).name
    except ValueError:
        return None


def _banner_body(banner: dict[str, str]) -> str:
    """The text after a bare exception line (its banner's first section that is not a call stack), up to a line
    that opens another traceback: vLLM prints a bare `AssertionError` and then, on the next prefixed line, the
    same error's `Traceback (most recent call last):` again — that traceback is not the exception's message."""
    text = next((v for k, v in banner.items() if "Stack" not in k), "")
    cut = text.find(TB_HEADER)
    if cut < 0:
        return text
    return text[: text.rfind("\n", 0, cut) + 1].strip()


def _join_what(st: _FileState, text: str, rec: Any, lineno: int, next_line: Callable[[], str]) -> tuple[str, Any]:
    """`terminate called after throwing an instance of 'X'` and, on the next line, `  what():  message`: one
    exception, whose message is the what() text (rules and the wording fallback read both as one line)."""
    if not CPP_TERMINATE_RE.match(text):
        return text, rec
    nxt = next_line()
    m = CPP_WHAT_RE.match(strip_prefixes(nxt)[0]) or CPP_WHAT_RE.match(nxt)
    if m is None:
        return text, rec
    st.joined_line = lineno + 1
    joined = f"{text.rstrip()}  what():  {m.group('msg').strip()}"
    return joined, parse_line(joined)


def _internal_code(groups: dict[str, str]) -> bool:
    """The line's code is an internal catch-all (E*9999), or it sits in one (`EH9999: … result = 207000`)."""
    from msdoctor.engine.codes import lookup

    codes = [groups.get("family_code") or ""] + (groups.get("other_codes") or "").split(",")
    return any(info.internal for info in (lookup(c) for c in codes if c) if info)


def _code_role(groups: dict[str, str]) -> str | None:
    """A code-family match takes its role from the code's data (a stream-sync time-out is a consequence)."""
    code = groups.get("family_code")
    if not code:
        return None
    from msdoctor.engine.codes import lookup

    info = lookup(code)
    return info.role if info else None

_TEXT_BYTES = bytes([9, 10, 13, 27, *range(32, 256)])  # deleted by translate: what is left is control bytes

def _mostly_binary(sample: bytes) -> bool:
    """More than 5 % control bytes (NUL included) in the first 64 KiB: not a text log."""
    if not sample:
        return False
    return len(sample.translate(None, _TEXT_BYTES)) > len(sample) // 20

def _head_grammar(head: bytes, max_lines: int = 400) -> int:
    """Lines of a known log grammar (MindSpore, plog, torch_npu, Python logging, exceptions) in the head:
    a file without any is not a log (a README, a config) and is not given a rank."""
    n = 0
    for raw in head.split(b"\n")[:max_lines]:
        if not raw.strip():
            continue
        text = raw.decode("utf-8", "replace")
        pre = strip_prefix_info(text)
        if parse_line(text).grammar != "plain" or pre.level is not None or parse_line(pre.text).grammar != "plain":
            n += 1
    return n

def _source_under(next_line: Callable[[], str] | None) -> str:
    """The source line Python prints under a traceback frame (not scanned: it is no candidate line), or ""."""
    if next_line is None:
        return ""
    nxt = strip_prefix_info(next_line()).text.strip()
    if not nxt or FRAME_LINE_RE.match(nxt) or nxt.startswith(("Traceback", "^", "~")):
        return ""
    return nxt[:200]


def _add_frame(st: _FileState, path: str, func: str | None, lineno: int, code_at: Callable[[], str] | None) -> None:
    """A frame of the open traceback (Python's, IPython's, rich's): its path and function, innermost last, the
    last MAX_FRAMES kept; ``code_at`` reads the source line under it (None where the frame line carries none)."""
    st.recognised += 1
    st.open_frames = [*st.open_frames[-(MAX_FRAMES - 1):], path]
    st.open_calls = [*st.open_calls[-(MAX_FRAMES - 1):], (func or "").strip()[:80]]
    st.open_code_at = code_at
    st.last_frame_line = lineno


def _read_dump(st: _FileState, text: str, lineno: int) -> bool:
    """A stack dump's thread header or frame (:data:`DUMP_THREAD_RE`): the kept thread's frames become the open
    traceback's, outermost first; True when the line was one (faulthandler's `Timeout (0:30:00)!` too: the
    dump_traceback_later header of a hang report, not an error; and a py-spy-shaped frame outside a dump, which the
    generic markers brought in: a stack print's frame is not an error line)."""
    if FAULTHANDLER_TIMEOUT_RE.match(text):
        st.recognised += 1
        return True
    hm = DUMP_THREAD_RE.match(text)
    if hm is not None:
        kind = "py-spy" if hm["state"] is not None else "faulthandler"
        if kind == "py-spy":  # the main thread; a dump without names: its first thread
            keep = hm["name"] == "MainThread" or (hm["name"] is None and st.open_dump != kind)
        else:  # the thread that caught the signal, else the last one listed (the main thread: threads newest first)
            keep = not (st.open_dump == kind and st.dump_current)
        if keep:
            st.open_frames, st.open_tb_line, st.open_calls, st.open_code_at = [], lineno, [], None
            st.open_tb_type, st.open_dump, st.dump_current = None, kind, bool(hm["current"])
        st.in_dump, st.dump_keep, st.dump_line = kind, keep, lineno
        st.recognised += 1
        return True
    in_dump = st.in_dump is not None and st.dump_line == lineno - 1
    fm = (FAULTHANDLER_FRAME_RE if in_dump and st.in_dump == "faulthandler" else PYSPY_FRAME_RE).match(text)
    if fm is None:
        return False
    if not in_dump:  # a frame-shaped line with no dump header above it
        return fm.re is PYSPY_FRAME_RE and fm["line"] is not None and fm["path"].endswith(".py")
    st.recognised += 1
    st.dump_line = st.last_frame_line = lineno
    path = fm["path"].strip()
    if st.dump_keep and len(st.open_frames) < MAX_FRAMES and (fm["line"] is not None or path.endswith(".py")):
        st.open_frames.insert(0, path)  # innermost first in the dump: the outer frames go in front
        st.open_calls.insert(0, fm["func"].strip()[:80])
    return True


def _open_traceback(st: _FileState) -> dict[str, Any] | None:
    """A traceback whose exception line is missing (the paste ends inside its frames, and no error line follows
    them): where it starts and its innermost frames; None when every traceback ended in its exception."""
    if not _ends_in_traceback(st):
        return None
    return {"line": st.open_tb_line, "last_frame_line": st.last_frame_line, "frames": list(st.open_frames),
            "calls": list(st.open_calls), "code": _source_under(st.open_code_at),
            "after_exception": bool(st.exceptions) and st.open_dump is None,  # vLLM prints the error, then its traceback: an echo
            "dump": st.open_dump}


def _summary(st: _FileState, head: bytes, size: int, lines: int) -> dict[str, Any]:
    hints = {k: sorted(v) for k, v in rank_hints(head).items()}
    if st.prefix_ranks:
        hints["content:[rankN] prefix"] = sorted(st.prefix_ranks)
    prank, psource = rank_from_path(st.path)
    msrun_map = {os.path.basename(p.decode("utf-8", "replace")): int(r) for r, p in MSRUN_WORKER_RE.findall(head)}
    sched_nodes = {int(n): int(r) for n, r in SCHED_NODE_RE.findall(head)}
    recent = list(st.recent_first) + [e for e in st.recent if e not in st.recent_first]
    return {
        "readable": True,
        "size": size,
        "lines": lines,
        "path_rank": prank,
        "path_rank_source": psource,
        "rank_hints": hints,
        "msrun_workers": msrun_map,
        "scheduler_nodes": sched_nodes,
        "world_size": world_size_hint(head),
        "pids": sorted(st.pids, key=lambda p: -st.pids[p])[:8],
        "hits": st.hits,
        "anomalies": st.anomalies,
        "first_events": st.first_events,
        "since_progress": recent,
        "progress": {"count": st.progress_count, "first": st.progress_first, "last": st.progress_last},
        "losses": st.losses,
        "last_traceback": st.last_traceback,
        "open_traceback": _open_traceback(st),
        "parallel_layout": layout_named(head, [*st.first_events, *recent], size),
        "exceptions": list(st.exceptions),
        "elastic": list(st.elastic),
        "cluster_up": st.cluster_up,
        "recognised": st.recognised + _head_grammar(head),
        "prefix_ranks": {str(k): v for k, v in sorted(st.prefix_ranks.items())[:1000]},
        "first_time": st.first_ts,
        "last_time": st.last_ts,
        "last_ts": st.last_ts_text,
    }
