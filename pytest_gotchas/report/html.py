"""The HTML view: one self-contained page rendered from the JSON report dict, and nothing else.

`render` is pure: it reads only the dict that `json_report.build` returns (the single source of truth) and computes
no verdict, pair or count of its own beyond tallying what the dict says. The page has inline CSS only: no scripts,
fonts, images or any other fetch, so it opens offline and can be mailed around as one file. Every string that came
from a case, a model or the command line goes through `html.escape`.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, Iterable

from .. import __version__
from ..files import write_atomic
from ..verdict import NOISE_FLOOR

CURSOR = "\u2588"  # █, where the model must continue
# Case-level keys in the order the summary lists them: the verdicts, then the reasons a case was not scored.
KEYS = ("ok", "MISS", "tie", "noise", "prime-dep", "crash", "unscored", "excluded", "skipped")
SLUG = {key: key.lower() for key in KEYS}


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def pct(p: float | None) -> str:
    return "\u2013" if p is None else f"{p * 100:.2f}%"


def _width(p: float | None) -> str:
    return f"{min(max(p or 0.0, 0.0), 1.0) * 100:.3f}%"


def _token(text: str) -> str:
    """A token as Python writes it (quotes, visible whitespace): tokens like '\\n' or ' ' must be seen."""
    return repr(text)


def _key(case: dict[str, Any]) -> str:
    return case.get("verdict") or "unknown" if case.get("status") == "scored" else case.get("status") or "unknown"


def badge(key: str | None, text: str | None = None) -> str:
    key = key or "unknown"
    return f'<span class="badge b-{e(SLUG.get(key, "unknown"))}">{e(text or key)}</span>'


def _anchor(chapter: str, case_id: str) -> str:
    return e(f"case-{chapter}-{case_id}")


# -- the page -------------------------------------------------------------------------------------------------


def render(data: dict[str, Any]) -> str:
    chapters = data.get("chapters") or []
    cases = data.get("cases") or []
    pairs = data.get("pairs") or []
    baseline = data.get("baseline") or None
    marks = _baseline_marks(baseline)
    model = data.get("model") or {}
    title = f"gotchas: {model.get('name') or 'no model'}"
    date = (data.get("run") or {}).get("date")
    if date:
        title += f", {str(date)[:10]}"
    by_chapter: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        by_chapter.setdefault(case.get("chapter") or "", []).append(case)
    names = [c.get("name") for c in chapters]
    # Cases of a chapter the dict does not describe still appear, under their own name.
    for name in by_chapter:
        if name not in names:
            chapters = [*chapters, {"name": name, "label": name, "twins": []}]
            names.append(name)
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"color-scheme\" content=\"light\">\n"
        f"<title>{e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        _header(data, cases),
        _summary(chapters, cases, baseline),
        _legend(),
    ]
    for chapter in chapters:
        name = chapter.get("name") or ""
        chapter_pairs = [p for p in pairs if p.get("chapter") == name]
        parts.append(_chapter(chapter, by_chapter.get(name, []), chapter_pairs, marks))
    parts.append(
        f"<footer>Rendered by pytest-gotchas {e(__version__)} from its JSON report "
        f"(format {e(data.get('format'))}); every number on this page is in that file.</footer>\n"
        "</main>\n</body>\n</html>\n"
    )
    return "".join(parts)


def write(path: Path | str, data: dict[str, Any]) -> None:
    """Atomic: a reader never sees half a page. Readable by others, as a page meant to be shared."""
    write_atomic(path, render(data))


# -- header, summary, legend -------------------------------------------------------------------------------------


def _header(data: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    model = data.get("model") or {}
    run = data.get("run") or {}
    softmax = sorted({r.get("softmax_dtype") for c in cases for r in c.get("runs") or [] if r.get("softmax_dtype")})
    interpreters = sorted({str(c["interpreter"]).split()[0] for c in cases if c.get("interpreter")})
    rows = [
        ("weights sha256", model.get("weights_sha256"), "mono"),
        ("dtype", model.get("dtype"), ""),
        ("softmax dtype", ", ".join(softmax) or None, ""),
        ("device", model.get("device"), ""),
        ("torch", model.get("torch_version"), ""),
        ("transformers", model.get("transformers_version"), ""),
        ("Python", run.get("python"), ""),
        ("case interpreters", ", ".join(interpreters) or None, ""),
        ("pytest", run.get("pytest"), ""),
        ("xdist workers", run.get("xdist_workers") or None, ""),
        ("platform", run.get("platform"), "wide"),
        ("date", str(run["date"]).replace("T", " ") if run.get("date") else None, "wide"),
        ("loaded from", model.get("source"), "mono"),
    ]
    cells = "".join(
        f'<div class="{cls}"><dt>{e(label)}</dt><dd class="{cls}">{e(value)}</dd></div>'
        for label, value, cls in rows if value not in (None, "")
    )
    command = run.get("command")
    return (
        '<header class="top">\n<p class="kicker">pytest-gotchas report</p>\n'
        f"<h1>{e(model.get('name') or 'no model was loaded')}</h1>\n"
        f'<dl class="meta">{cells}</dl>\n'
        + (f'<pre class="command"><span class="dollar">$ </span>{e(command)}</pre>\n' if command else "")
        + "</header>\n"
    )


def _counts(cases: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for case in cases:
        counts[_key(case)] = counts.get(_key(case), 0) + 1
    return counts


def _chips(counts: dict[str, int], show_zero: bool) -> str:
    keys = list(KEYS) + sorted(k for k in counts if k not in KEYS)
    return "".join(
        f'<span class="chip{"" if counts.get(k) else " zero"}">{badge(k)}<b>{counts.get(k, 0)}</b></span>'
        for k in keys if show_zero or counts.get(k)
    )


def _summary(chapters: list[dict[str, Any]], cases: list[dict[str, Any]], baseline: Any) -> str:
    counts = _counts(cases)
    scored = sum(1 for c in cases if c.get("status") == "scored")
    rows = []
    for chapter in chapters:
        name = chapter.get("name") or ""
        mine = [c for c in cases if c.get("chapter") == name]
        rows.append(
            f'<tr><th scope="row"><a href="#ch-{e(name)}">{e(chapter.get("label") or name)}</a></th>'
            f'<td class="num">{len(mine)}</td><td class="chips">{_chips(_counts(mine), False)}</td>'
            f"<td>{_pairs_cell(chapter)}</td><td>{_twins_cell(chapter)}</td></tr>"
        )
    table = (
        '<table class="chapters"><thead><tr><th>chapter</th><th class="num">cases</th><th>verdicts</th>'
        "<th>pairs passed</th><th>written twice</th></tr></thead>\n<tbody>" + "\n".join(rows) + "</tbody></table>"
    )
    return (
        '<section class="summary">\n<h2>Summary</h2>\n'
        f'<p class="lead">{len(cases)} cases, {scored} scored. Pairs are counted per chapter and never pooled.</p>\n'
        f'<div class="chips big">{_chips(counts, True)}</div>\n{table}\n{_baseline(baseline)}</section>\n'
    )


def _pairs_cell(chapter: dict[str, Any]) -> str:
    total = chapter.get("pairs_total") or 0
    if not total:
        return '<span class="muted">no pairs</span>'
    passed, counted = chapter.get("pairs_passed") or 0, chapter.get("pairs_counted") or 0
    fill = passed / counted if counted else 0.0
    extra = f' <span class="muted">({total - counted} not scored)</span>' if total > counted else ""
    return (f'<span class="ratio"><span class="meter"><span style="width:{_width(fill)}"></span></span>'
            f"<b>{passed}/{counted}</b> pairs</span>{extra}")


def _twins_cell(chapter: dict[str, Any]) -> str:
    twins = chapter.get("twins") or []
    if not twins:
        return '<span class="muted">\u2013</span>'
    judged = [t for t in twins if t.get("agree") is not None]
    agree = sum(1 for t in judged if t.get("agree"))
    return f"agree <b>{agree}/{len(judged)}</b>"


def _legend() -> str:
    floor = f"{NOISE_FLOOR * 100:g}%"
    return f"""<details class="legend" open>
<summary>How to read a case</summary>
<div class="legend-grid">
<div>
<p>The model sees exactly the text in the block, up to the cursor <span class="cursor">{CURSOR}</span>, and one
forward pass reads the probability of two continuations at that point: the <b class="t-correct">correct</b> one
(what the interpreter printed) and the <b class="t-wrong">natural misreading</b>.</p>
<div class="bar demo" aria-hidden="true"><span class="pc" style="width:55%">P(correct)</span><span class="pw"
style="width:30%">P(wrong)</span><span class="rest" style="width:15%"></span></div>
<p class="small">The grey rest is every other token. <b>coverage</b> = P(correct) + P(wrong): how much of the
answer the two candidates account for. <b>margin</b> = |P(correct) &minus; P(wrong)|, reported, never thresholded.</p>
</div>
<ul class="rules">
<li>{badge("ok")} P(correct) &gt; P(wrong), by any margin</li>
<li>{badge("MISS")} P(wrong) &gt; P(correct)</li>
<li>{badge("tie")} exactly equal: argmax would invent a preference</li>
<li>{badge("noise")} the larger candidate is below {floor}: the answer is neither</li>
<li>{badge("prime-dep")} the verdict changes with the primer order</li>
<li>{badge("unscored")} {badge("crash")} {badge("excluded")} {badge("skipped")} executed or planned, not put to
the model</li>
<li>A pair passes only if every member is {badge("ok")}.</li>
</ul>
</div>
</details>
"""


def _baseline_marks(baseline: Any) -> dict[str, str]:
    marks: dict[str, str] = {}
    if isinstance(baseline, dict):
        for kind, mark in (("regressions", "regressed"), ("improvements", "improved")):
            for item in baseline.get(kind) or []:
                marks[_item_key(item)] = mark
    return marks


def _item_key(item: Any) -> str:
    if isinstance(item, dict):
        return str(item.get("key") or item.get("pair") or item.get("id") or item)
    return str(item)


def _baseline(baseline: Any) -> str:
    if not baseline:
        return ""
    if not isinstance(baseline, dict):
        return f'<div class="baseline"><h3>Baseline</h3><p>{e(baseline)}</p></div>\n'
    facts, lists = [], []
    order = ["regressions", "improvements"] + sorted(k for k in baseline if k not in ("regressions", "improvements"))
    for name in order:
        if name not in baseline:
            continue
        value = baseline[name]
        if isinstance(value, list):
            cls = {"regressions": "regressed", "improvements": "improved"}.get(name, "other")
            items = "\n".join(f"<li><code>{e(_item_key(v))}</code></li>" for v in value) or '<li class="muted">none</li>'
            lists.append(f'<div class="blist {cls}"><h4>{e(name)} <b>{len(value)}</b></h4>\n<ul>{items}</ul></div>\n')
        elif isinstance(value, dict):
            facts.append(f"<div><dt>{e(name)}</dt><dd>{e(', '.join(f'{k}: {v}' for k, v in value.items()))}</dd></div>")
        else:
            facts.append(f"<div><dt>{e(name)}</dt><dd>{e(value)}</dd></div>")
    return ('<div class="baseline"><h3>Compared with the baseline</h3>'
            + (f'<dl class="meta">{"".join(facts)}</dl>' if facts else "")
            + f'<div class="blists">{"".join(lists)}</div></div>\n')


# -- a chapter --------------------------------------------------------------------------------------------------


def _chapter(chapter: dict[str, Any], cases: list[dict[str, Any]], pairs: list[dict[str, Any]],
             marks: dict[str, str]) -> str:
    name = chapter.get("name") or ""
    label = chapter.get("label") or name
    notes = []
    if chapter.get("path"):
        notes.append(f"<code>{e(chapter['path'])}</code>")
    if chapter.get("implementation_defined"):
        notes.append("implementation-defined: ground truth is this interpreter build's behaviour; "
                     "a mismatch elsewhere excludes the case instead of failing")
    if any(len(c.get("runs") or []) > 1 for c in cases):
        notes.append("each case runs under every primer order, side by side; "
                     "a verdict that changes with the order is prime-dep")
    verdict_line = _pairs_cell(chapter) if chapter.get("pairs_total") else ""
    out = [
        f'<section class="chapter" id="ch-{e(name)}">\n<div class="chead"><h2>{e(label)}</h2>'
        f'<div class="cstat">{verdict_line}</div></div>\n',
        f'<p class="cnotes">{" &middot; ".join(notes)}</p>\n' if notes else "",
    ]
    out.extend(_case(name, case) for case in cases)
    verdicts = {c.get("id"): _key(c) for c in cases}
    if pairs:
        out.append(_pairs(name, pairs, marks, verdicts))
    if chapter.get("twins"):
        out.append(_twins(name, chapter["twins"]))
    if chapter.get("line"):
        out.append(f'<p class="cline">{e(chapter["line"])}</p>\n')
    out.append("</section>\n")
    return "".join(out)


def _member(chapter: str, member: str, verdict: str | None, verdicts: dict[str, str]) -> str:
    shown = verdict or verdicts.get(member)
    return (f'<span class="member"><a href="#{_anchor(chapter, member)}">{e(member)}</a> '
            f'{badge(shown, None) if shown else badge("unknown", "not run")}</span>')


def _pairs(chapter: str, pairs: list[dict[str, Any]], marks: dict[str, str], verdicts: dict[str, str]) -> str:
    rows = []
    for pair in pairs:
        passed = pair.get("passed")
        state, cls = ("pass", "pass") if passed else ("not scored", "none") if passed is None else ("FAIL", "fail")
        members = " <span class='vs'>+</span> ".join(
            _member(chapter, m, v, verdicts)
            for m, v in zip(pair.get("members") or [], (pair.get("verdicts") or []) + [None] * 8))
        key = pair.get("key") or f"{chapter}/{pair.get('id')}"
        mark = marks.get(key)
        tag = f' <span class="tag {mark}">{mark}</span>' if mark else ""
        rows.append(f'<li class="pair {cls}"><span class="state">{state}</span> '
                    f'<span class="pid">pair {e(pair.get("id"))}</span> {members}{tag}</li>')
    return '<div class="pairs"><h3>Pairs</h3><ul>' + "".join(rows) + "</ul></div>\n"


def _twins(chapter: str, twins: list[dict[str, Any]]) -> str:
    rows = []
    for twin in twins:
        agree = twin.get("agree")
        state, cls = ("agree", "pass") if agree else ("not scored", "none") if agree is None else ("disagree", "fail")
        members = " <span class='vs'>/</span> ".join(
            _member(chapter, m, v, {})
            for m, v in zip(twin.get("members") or [], (twin.get("verdicts") or []) + [None] * 8))
        rows.append(f'<li class="pair {cls}"><span class="state">{state}</span> '
                    f'<span class="pid">{e(twin.get("id"))}</span> {members}</li>')
    return ('<div class="pairs twins"><h3>Written twice</h3><p class="small muted">The same program in two spellings. '
            "Disagreement rules out a reading of the semantics; agreement proves little.</p><ul>"
            + "".join(rows) + "</ul></div>\n")


# -- a case -----------------------------------------------------------------------------------------------------


def _case(chapter: str, case: dict[str, Any]) -> str:
    key = _key(case)
    runs = case.get("runs") or []
    interp = case.get("interpreter")
    head = (f'<header><h3><a href="#{_anchor(chapter, case.get("id") or "")}">{e(case.get("id"))}</a></h3>'
            f"{badge(key)}"
            + (f'<span class="interp" title="{e(interp)}">python {e(str(interp).split()[0])}</span>' if interp else "")
            + "</header>\n")
    body = []
    if case.get("status") == "scored" and runs:
        primed = len(runs) > 1
        dim = _shared_tail(runs) if primed else None
        body.append(f'<div class="runs {"many" if primed else "one"}">')
        body.extend(_run(run, primed, dim) for run in runs)
        body.append("</div>\n")
        if primed:
            word = "agree" if key != "prime-dep" else "differ"
            body.append(f'<p class="combined">The {len(runs)} primer orders {word}: case verdict {badge(key)}</p>\n')
    else:
        if case.get("message"):
            body.append(f'<pre class="message">{e(case["message"])}</pre>\n')
        outputs = case.get("outputs") or []
        if outputs:
            body.append('<div class="outputs">')
            for seed, text in outputs:
                body.append(f'<figure><figcaption>PYTHONHASHSEED={e(seed)}</figcaption>'
                            f'<pre class="prompt">{e(text)}</pre></figure>')
            body.append("</div>\n")
        for run in runs:  # a case that was not scored carries no runs today; show any it has
            body.append(_run(run, False, None))
    note = case.get("note")
    foot = f'<p class="note"><span>note</span> {e(note)}</p>\n' if note else ""
    return (f'<article class="case k-{e(SLUG.get(key, "unknown"))}" id="{_anchor(chapter, case.get("id") or "")}">\n'
            + head + "".join(body) + foot + "</article>\n")


def _shared_tail(runs: list[dict[str, Any]]) -> int:
    """How many trailing lines every primed prompt shares: the case itself; the lines above it are the primer."""
    split = [str(r.get("prompt") or "").split("\n") for r in runs]
    n = 0
    while all(len(s) > n for s in split) and len({s[len(s) - 1 - n] for s in split}) == 1:
        n += 1
    return n


def _prompt(text: str, shared_tail: int | None) -> str:
    lines = text.split("\n")
    if shared_tail is not None and 0 < shared_tail < len(lines):
        head, tail = lines[:len(lines) - shared_tail], lines[len(lines) - shared_tail:]
        body = f'<span class="primer">{e(chr(10).join(head))}\n</span>{e(chr(10).join(tail))}'
    else:
        body = e(text)
    return f'<pre class="prompt">{body}<span class="cursor" title="the cut">{CURSOR}</span></pre>'


def _run(run: dict[str, Any], primed: bool, shared_tail: int | None) -> str:
    pc, pw = run.get("p_correct"), run.get("p_wrong")
    coverage = run.get("coverage")
    rest = max(0.0, 1.0 - (coverage if coverage is not None else (pc or 0) + (pw or 0)))
    correct, wrong = str(run.get("correct") or ""), str(run.get("wrong") or "")
    title = ""
    if primed:
        title = (f'<div class="rhead"><span class="primer-name">primer <b>{e(run.get("primer"))}</b></span>'
                 f"{badge(run.get('verdict'))}</div>")
    segments = "".join(
        f'<span class="{cls}" style="width:{_width(p)}" title="{e(label)} {pct(p)}">'
        + (e(f"{label} {pct(p)}") if (p or 0) >= 0.16 else "") + "</span>"
        for cls, p, label in (("pc", pc, _token(correct)), ("pw", pw, _token(wrong)), ("rest", rest, "rest")))
    answer = [
        f'<div class="bar" role="img" aria-label="P(correct) {pct(pc)}, P(wrong) {pct(pw)}, rest {pct(rest)}">'
        f"{segments}</div>",
        '<div class="nums">'
        f'<span class="n-correct"><i></i>correct <code>{e(_token(correct))}</code> <b>{pct(pc)}</b></span>'
        f'<span class="n-wrong"><i></i>wrong <code>{e(_token(wrong))}</code> <b>{pct(pw)}</b></span>'
        f'<span class="n-rest"><i></i>rest <b>{pct(rest)}</b></span></div>',
        '<div class="stats">'
        + ("" if primed else f"{badge(run.get('verdict'))}")
        + f"<span>coverage <b>{pct(coverage)}</b></span><span>margin <b>{pct(run.get('margin'))}</b></span></div>",
        _cut(run),
        _top(run),
    ]
    return (f'<div class="run">{title}{_prompt(str(run.get("prompt") or ""), shared_tail)}'
            f'<div class="answer">{"".join(answer)}</div></div>')


def _cut(run: dict[str, Any]) -> str:
    reading = run.get("reading") or "plain"
    if reading == "plain":
        return ""
    label = "healed cut" if reading == "healed" else "multi-token cut" if reading == "chain" else f"{reading} cut"
    why = ("the tokenizer merges the text before the cut with the candidates, so the model is read where the "
           "merged tokens start" if reading == "healed" else
           "from the shared context a candidate takes several tokens; its probability is the product along its chain")
    def chain(tokens: list[str]) -> str:
        return " + ".join(f"<code>{e(_token(t))}</code>" for t in tokens) or "\u2013"
    plain = ""
    if run.get("plain_p_correct") is not None:
        plain = (f'<div class="plain">plain reading at the full prompt: correct <b>{pct(run.get("plain_p_correct"))}'
                 f'</b>, wrong <b>{pct(run.get("plain_p_wrong"))}</b> {badge(run.get("plain_verdict"))}</div>')
    return (f'<div class="cut"><div><span class="tag cutlabel">{e(label)}</span> '
            f'<span class="t-correct">{chain(run.get("correct_tokens") or [])}</span> vs '
            f'<span class="t-wrong">{chain(run.get("wrong_tokens") or [])}</span></div>'
            f'<div class="small muted">{e(why)}</div>{plain}</div>')


def _top(run: dict[str, Any]) -> str:
    top = run.get("top") or []
    if not top:
        return ""
    correct = (run.get("correct_tokens") or [None])[0]
    wrong = (run.get("wrong_tokens") or [None])[0]
    rows = []
    for token, p in top:
        cls = "t-correct" if token == correct else "t-wrong" if token == wrong else ""
        rows.append(f'<li class="{cls}" style="--p:{_width(float(p))}"><code>{e(_token(str(token)))}</code>'
                    f"<b>{pct(float(p))}</b></li>")
    return (f'<div class="alts"><span class="small muted">top {len(top)} at the cut</span>'
            f'<ol>{"".join(rows)}</ol></div>')


CSS = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d8dee4;--bg:#ffffff;--soft:#f6f8fa;--accent:#0969da;
--ok:#1a7f37;--ok-bg:#dafbe1;--miss:#cf222e;--miss-bg:#ffebe9;--tie:#9a6700;--tie-bg:#fff8c5;
--noise:#57606a;--noise-bg:#eaeef2;--pd:#8250df;--pd-bg:#fbefff;--un:#0550ae;--un-bg:#ddf4ff;
--mono:ui-monospace,"SFMono-Regular","DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;
--sans:system-ui,-apple-system,"Segoe UI","DejaVu Sans","Liberation Sans",Helvetica,Arial,sans-serif}
*{box-sizing:border-box}
html{background:var(--soft)}
body{margin:0;color:var(--fg);font:15px/1.5 var(--sans);-webkit-text-size-adjust:100%}
main{max-width:1200px;margin:0 auto;padding:28px 28px 60px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code,pre,.mono{font-family:var(--mono)}
code{font-size:.92em}
h1,h2,h3,h4{line-height:1.25;margin:0}
.muted{color:var(--muted)}.small{font-size:13px}
header.top{background:var(--bg);border:1px solid var(--line);border-radius:12px;padding:22px 26px;margin-bottom:20px}
.kicker{margin:0 0 4px;color:var(--muted);font-size:13px;letter-spacing:.06em;text-transform:uppercase}
h1{font-size:28px;margin-bottom:14px}
dl.meta{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:10px 22px;margin:0}
dl.meta div{min-width:0}
dl.meta dt{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
dl.meta dd{margin:0;font-weight:600;overflow-wrap:anywhere}
dl.meta dd.mono{font-weight:500;font-size:13px}
dl.meta div:has(dd.mono),dl.meta div.wide{grid-column:span 2}
pre.command{margin:16px 0 0;padding:10px 14px;background:#1f2328;color:#f0f3f6;border-radius:8px;
white-space:pre-wrap;overflow-wrap:anywhere;font-size:13.5px}
pre.command .dollar{color:#8c959f}
section.summary,section.chapter,details.legend{background:var(--bg);border:1px solid var(--line);border-radius:12px;
padding:20px 26px;margin-bottom:20px}
section.summary h2{font-size:20px;margin-bottom:4px}
.lead{margin:0 0 12px;color:var(--muted)}
.chips{display:flex;flex-wrap:wrap;gap:6px 10px;align-items:center}
.chips.big{margin-bottom:16px}
.chip{display:inline-flex;align-items:center;gap:5px}
.chip b{font-variant-numeric:tabular-nums}
.chips.big .chip{border:1px solid var(--line);border-radius:999px;padding:3px 10px 3px 4px;background:var(--soft)}
.chips.big .chip b{font-size:16px}
.chip.zero{opacity:.45}
table.chapters{width:100%;border-collapse:collapse;font-size:14px}
table.chapters th,table.chapters td{text-align:left;padding:8px 10px;border-top:1px solid var(--line);vertical-align:middle}
table.chapters thead th{border-top:none;font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;font-weight:600}
table.chapters tbody th{font-weight:600}
.num{text-align:right!important;font-variant-numeric:tabular-nums}
.ratio{display:inline-flex;align-items:center;gap:8px;white-space:nowrap}
.meter{display:inline-block;width:70px;height:8px;border-radius:4px;background:var(--miss-bg);overflow:hidden;
box-shadow:inset 0 0 0 1px #ffcecb}
.meter span{display:block;height:100%;background:var(--ok)}
.badge{display:inline-block;font:600 12px/1 var(--mono);padding:4px 7px;border-radius:6px;border:1px solid transparent;
white-space:nowrap;vertical-align:middle}
.b-ok{background:var(--ok-bg);color:var(--ok);border-color:#aceebb}
.b-miss{background:var(--miss-bg);color:var(--miss);border-color:#ffcecb}
.b-tie{background:var(--tie-bg);color:var(--tie);border-color:#f5e0a1}
.b-noise{background:var(--noise-bg);color:var(--noise);border-color:#d0d7de}
.b-prime-dep{background:var(--pd-bg);color:var(--pd);border-color:#e3c6ff}
.b-crash{background:var(--miss);color:#fff}
.b-unscored{background:var(--un-bg);color:var(--un);border-color:#b6e3ff}
.b-excluded,.b-skipped,.b-unknown{background:#fff;color:var(--muted);border:1px dashed #afb8c1}
details.legend summary{cursor:pointer;font-weight:700;font-size:16px}
.legend-grid{display:grid;grid-template-columns:minmax(0,1.2fr) minmax(0,1fr);gap:10px 34px;margin-top:10px}
.legend-grid p{margin:0 0 10px}
ul.rules{margin:0;padding:0;list-style:none;font-size:14px}
ul.rules li{margin:0 0 7px}
.bar.demo{margin:4px 0 10px}
.chead{display:flex;align-items:baseline;justify-content:space-between;gap:16px;flex-wrap:wrap;
border-bottom:2px solid var(--fg);padding-bottom:8px}
.chead h2{font-size:22px}
.cstat{font-size:16px}
.cnotes{margin:8px 0 4px;color:var(--muted);font-size:13px}
.cline{margin:14px 0 0;font-weight:600}
article.case{border:1px solid var(--line);border-left:5px solid var(--noise-bg);border-radius:10px;padding:14px 16px;
margin:16px 0;break-inside:avoid}
article.case.k-ok{border-left-color:var(--ok)}article.case.k-miss{border-left-color:var(--miss)}
article.case.k-tie{border-left-color:#d4a72c}article.case.k-noise{border-left-color:#8c959f}
article.case.k-prime-dep{border-left-color:var(--pd)}article.case.k-crash{border-left-color:var(--miss)}
article.case.k-unscored{border-left-color:#54aeff}
article.case>header{display:flex;align-items:center;gap:10px;flex-wrap:wrap;margin-bottom:10px}
article.case h3{font:700 16px/1.3 var(--mono)}
article.case h3 a{color:var(--fg)}
.interp{margin-left:auto;font:12px var(--mono);color:var(--muted)}
.runs.one .run{display:grid;grid-template-columns:minmax(0,1.05fr) minmax(0,1fr);gap:18px;align-items:start}
.runs.many{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:18px}
.runs.many .run{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:#fcfdfd}
.runs.many .run .answer{margin-top:10px}
.rhead{display:flex;justify-content:space-between;align-items:center;margin-bottom:8px;font-size:13px}
pre.prompt,pre.message{margin:0;padding:10px 12px;background:var(--soft);border:1px solid var(--line);border-radius:6px;
font-size:13px;line-height:1.45;white-space:pre-wrap;overflow-wrap:anywhere;tab-size:4}
pre.message{background:#fff5f5;border-color:#ffcecb;color:#6e1116}
.k-unscored pre.message{background:var(--un-bg);border-color:#b6e3ff;color:#0a3069}
.primer{color:#8c959f}
.cursor{color:var(--accent);animation:none}
.bar{display:flex;height:24px;border-radius:5px;overflow:hidden;background:#eaeef2;border:1px solid var(--line)}
.bar span{display:flex;align-items:center;justify-content:center;overflow:hidden;white-space:nowrap;
font:600 12px/1 var(--mono);color:#fff;min-width:0}
.bar .pc{background:var(--ok)}.bar .pw{background:var(--miss)}
.bar .rest{background:repeating-linear-gradient(135deg,#eaeef2 0 6px,#dde3e8 6px 12px);color:var(--muted)}
.nums{display:flex;flex-wrap:wrap;gap:4px 16px;margin-top:6px;font-size:13px}
.nums i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.n-correct i{background:var(--ok)}.n-wrong i{background:var(--miss)}.n-rest i{background:#d0d7de}
.nums b,.stats b,.alts b{font-variant-numeric:tabular-nums}
.stats{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;margin-top:8px;font-size:13px}
.t-correct,.t-correct code{color:var(--ok)}.t-wrong,.t-wrong code{color:var(--miss)}
.cut{margin-top:10px;padding:8px 10px;border-radius:6px;background:#fff8e6;border:1px solid #f5e0a1;font-size:13px}
.cut .plain{margin-top:4px}
.tag{display:inline-block;font:600 11px/1 var(--sans);text-transform:uppercase;letter-spacing:.05em;padding:3px 6px;
border-radius:4px;background:var(--tie-bg);color:var(--tie);border:1px solid #f5e0a1}
.tag.regressed{background:var(--miss);color:#fff;border-color:var(--miss)}
.tag.improved{background:var(--ok);color:#fff;border-color:var(--ok)}
.alts{margin-top:10px;display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 6px}
.alts>span{flex-basis:100%}
.alts ol{display:contents;list-style:none}
.alts li{display:inline-flex;gap:6px;align-items:baseline;padding:2px 7px;border:1px solid var(--line);border-radius:5px;
font-size:13px;background:linear-gradient(to right,#d0d7de var(--p),#fff var(--p))}
.alts li.t-correct{background:linear-gradient(to right,#aceebb var(--p),#fff var(--p));border-color:#aceebb}
.alts li.t-wrong{background:linear-gradient(to right,#ffcecb var(--p),#fff var(--p));border-color:#ffcecb}
.alts li code{white-space:pre;color:var(--fg)}
.alts li b{font-weight:500;color:var(--fg)}
.runs.many .alts li{font-size:12px;padding:1px 5px;gap:4px}
.combined{margin:10px 0 0;font-size:14px}
.note{margin:10px 0 0;font-size:13px;color:var(--muted)}
.note span{font:600 11px var(--sans);text-transform:uppercase;letter-spacing:.05em;margin-right:4px}
.outputs{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:10px;margin-top:10px}
.outputs figure{margin:0}
.outputs figcaption{font:600 12px var(--mono);color:var(--muted);margin-bottom:3px}
.pairs{margin-top:18px}
.pairs h3{font-size:16px;margin-bottom:6px}
.pairs ul{list-style:none;margin:0;padding:0}
.pair{display:flex;flex-wrap:wrap;align-items:center;gap:6px 10px;padding:7px 10px;border-radius:6px;margin:4px 0;
background:var(--soft);font-size:14px}
.pair .state{font:700 12px/1 var(--mono);padding:4px 8px;border-radius:4px;min-width:72px;text-align:center}
.pair.pass .state{background:var(--ok);color:#fff}.pair.fail .state{background:var(--miss);color:#fff}
.pair.none .state{background:#d0d7de;color:var(--fg)}
.pid{font-weight:600;font-family:var(--mono);font-size:13px;margin-right:6px}
.member{display:inline-flex;align-items:center;gap:5px;font-family:var(--mono);font-size:13px}
.vs{color:var(--muted)}
.twins p{margin:0 0 6px}
.baseline{margin-top:18px;border-top:1px solid var(--line);padding-top:14px}
.baseline h3{font-size:16px;margin-bottom:8px}
.blists{display:flex;flex-wrap:wrap;gap:12px 40px;margin-top:10px}
.blist h4{font-size:14px;text-transform:capitalize}
.blist.regressed h4{color:var(--miss)}.blist.improved h4{color:var(--ok)}
.blist ul{margin:4px 0 0;padding-left:18px;font-size:13px}
footer{color:var(--muted);font-size:13px;text-align:center;margin-top:24px}
@media (max-width:860px){main{padding:14px}.runs.one .run,.runs.many,.legend-grid{grid-template-columns:minmax(0,1fr)}
dl.meta div:has(dd.mono){grid-column:auto}}
@media print{html{background:#fff}main{max-width:none;padding:0}section.summary,section.chapter,details.legend,
header.top{border:none;padding:0 0 12px}article.case{break-inside:avoid}.bar span,.meter span,.alts li,.pair .state,
.badge,.tag{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
"""
