"""Does a verdict survive the ways real users paste a log? (issue 11, "grammars that survive real pasting")

Every case of the real-world corpus that `msdoctor logs` gets right is pasted again in each of the forms below,
each met in real threads, and scored again. A form under which a case loses its area (its headline changes area,
or it has none) is a grammar the readers do not survive; the row per form says how many cases each loses.

* `rank prefix`     torchrun's `[rank3]: ` before every line (torch ≥ 2.2 with `--log-line-prefix-template`)
* `ray prefix`      Ray's `(RayWorkerWrapper pid=4321) ` before every line
* `compose prefix`  docker compose's `vllm-1  | ` before every line
* `quote`           a markdown or e-mail quote, `> ` before every line
* `indent`          an indented code block, four spaces before every line
* `crlf`            Windows line ends
* `ansi`            colour codes around the whole line (a terminal's coloured level, kept by a copy of raw output)
* `wrap`            a browser or terminal that breaks lines at 100 characters (the rest on the next line)
* `json`            the whole log as one JSON string with literal `\\n` (a serving API's error body, a notebook cell)
* `html`            a forum page's entities (`&lt;`, `&gt;`, `&quot;`, `&#39;`, `&amp;`)
* `nbsp`            a web page's non-breaking spaces instead of spaces (a copy out of a rendered page)
* `oneline`         the line breaks lost: every line joined with a space (a forum or Q&A form that flattens a paste)

    python bench/paste.py [--forms F,F] [--sample N] [--verbose] [--write] [CASE...]

The forms are mechanical, so the figure is not a claim about real users' frequency: it finds grammars that break.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import realworld as rw  # noqa: E402

HEAD = "## Real-world logs pasted again (`bench/paste.py`)"


def _each_line(fn):
    return lambda text: "".join(fn(ln) for ln in text.splitlines(keepends=True))


def hard_wrap(text: str, width: int = 100) -> str:
    """``text`` cut at ``width`` columns, mid-word, the rest of each long line on the next (a terminal's copy)."""
    out = []
    for ln in text.splitlines():
        while len(ln) > width:
            out.append(ln[:width])
            ln = ln[width:]
        out.append(ln)
    return "\n".join(out) + "\n"


FORMS = {
    "rank prefix": _each_line(lambda ln: "[rank3]: " + ln),
    "ray prefix": _each_line(lambda ln: "(RayWorkerWrapper pid=4321) " + ln),
    "compose prefix": _each_line(lambda ln: "vllm-1  | " + ln),
    "quote": _each_line(lambda ln: "> " + ln),
    "indent": _each_line(lambda ln: "    " + ln),
    "crlf": lambda text: text.replace("\r\n", "\n").replace("\n", "\r\n"),
    "ansi": _each_line(lambda ln: "\x1b[31m" + ln.rstrip("\n") + "\x1b[0m" + ("\n" if ln.endswith("\n") else "")),
    "wrap": hard_wrap,
    "json": lambda text: json.dumps({"error": text}, ensure_ascii=False) + "\n",
    "html": lambda text: html.escape(text, quote=True),
    "nbsp": lambda text: text.replace(" ", "\u00a0"),
    "oneline": lambda text: " ".join(ln.strip() for ln in text.splitlines() if ln.strip()) + "\n",
}


def _right(s: rw.Score) -> bool:
    """A headline of the expected area (a case without one, right only by an info finding, is not counted)."""
    return s.status in ("found", "partial") and s.headline is not None


def pasted(case: rw.Case, form: str, into: Path) -> rw.Case:
    """A copy of the case whose text files are pasted in ``form`` (SOURCE.md unchanged)."""
    dst = into / case.name
    shutil.copytree(case.path, dst)
    for f in dst.rglob("*"):
        if f.is_file() and f.name != "SOURCE.md":
            raw = f.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            f.write_text(FORMS[form](text), encoding="utf-8", newline="")
    return rw.Case(case.name, dst, case.meta, case.category, case.rules, case.rank, case.values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--forms", default=",".join(FORMS), help="comma-separated forms (default: all)")
    ap.add_argument("--sample", type=int, default=0, help="N right cases evenly spaced over the corpus (0: all)")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--write", action="store_true", help="replace the section in bench/RESULTS.md")
    args = ap.parse_args(argv)
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    unknown = [f for f in forms if f not in FORMS]
    if unknown:
        print(f"bench/paste.py: unknown form(s) {unknown}; known: {list(FORMS)}", file=sys.stderr)
        return 2
    right = [s.case for s in map(rw.score, rw.cases(args.cases or None)) if _right(s)]
    if args.sample and args.sample < len(right):
        right = [right[i * len(right) // args.sample] for i in range(args.sample)]
    lost: dict[str, list[str]] = {f: [] for f in forms}
    misled: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="msdoctor-paste-") as tmp:
        for form in forms:
            where = Path(tmp) / re.sub(r"\W", "_", form)
            where.mkdir()
            for case in right:
                s = rw.score(pasted(case, form, where))
                if not _right(s):
                    lost[form].append(case.name)
                    misled[form] += s.status == "misleading"
                    if args.verbose:
                        print(f"{form:15} {s.status:10} {case.name:60} {case.category:5} headline={s.headline}")
    lines = [f"{len(right)} cases with a right headline, each pasted again in {len(forms)} forms", "",
             "| form | cases that lose their area | of which now misleading |", "| --- | ---: | ---: |"]  # fmt: skip
    for form in forms:
        lines.append(f"| {form} | {len(lost[form])} | {misled[form]} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        import datetime as _dt

        when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        body = f"{HEAD}\n\nMeasured {when}. {__doc__.split(chr(10) * 2)[1].strip()}\n\n{text}\n"
        rw.replace_measurement(HEAD, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
