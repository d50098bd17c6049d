"""The report's last section, "How to read this report" (issue 58, 6): every term the report uses, in plain words, so
that a reader holding only report.md needs no repository file; report.html ends with the same terms and links each
on its first use (`glossary`: an anchor and the words that name it). Static words; the longer glossary is
docs/glossary.md, whose terms these must agree with. Pure; imports nothing of the package.
"""

from __future__ import annotations

import re

TERMS = (
    ("reference", "the configuration every cell is compared with (the matrix's `reference:`); 1.00x by definition"),
    ("cell", "one configuration served: the matrix's base flags plus one value of each axis; named by what differs "
     "from the reference (the cell names table maps each name to its id and flags)"),
    ("faster / slower / equal / undecided", "the speed verdict: faster when the interval of the speed-up lies above "
     "1.05 (a 5% floor), slower when below 1/1.05, equal within both, else undecided"),
    ("interval `[L%: a–b]`", "the range the true value lies in at the stated level; the level is written inside the "
     "brackets or in the column's header"),
    ("margin", "the largest accuracy drop (reference minus cell, as a fraction: 0.02 is 2 points) that still counts as "
     "no change; `gate.margin`, per task where the matrix says so"),
    ("equivalent", "the drop's interval lies inside ± the margin on every task: the answers are as good"),
    ("not worse", "the drop's one-sided upper bound lies below the margin (a gain is fine): the confirmation's test"),
    ("worse", "the drop's lower bound lies above the margin: credibly worse"),
    ("inconclusive", "neither: the documents and repeats measured cannot tell; the report says how many more would"),
    ("drop ≤ x", "the largest one-sided 95% upper bound of a task's drop: below the margin means within it"),
    ("flips", "documents the reference answered right and the cell wrong (right→wrong), and the other way"),
    ("shorter / longer (output length)", "a cell's output tokens per answer credibly more than 10% below / above "
     "the reference's on a task (paired by document, 90% interval) or a throughput scenario: a cell that stops "
     "early looks faster, so it is named beside its speed-up"),
    ("goodput", "output tokens per second of the requests that met the SLO; a request that missed it counts nothing"),
    ("SLO", "the latency targets a request must meet (for example p90 time to first token ≤ 1000 ms)"),
    ("operating point", "the load (concurrent streams) at which cells are compared; with an SLO, where the reference "
     "serves the most goodput"),
    ("look", "a point where a task's repeats so far are tested, so a settled task stops early; each look spends part "
     "of the 5% error rate, which is why an early interval is wider"),
    ("screening", "a cell credibly not faster answers only its first look's share of documents: it cannot be the pick"),
    ("set aside", "a throughput repeat during which the host was busy with other work; measured again, not counted"),
    ("KL", "Kullback-Leibler divergence of the cell's next-token distribution from the reference's, per token in "
     "nats: 0 is the same distribution"),
    ("A/A", "the reference compared with itself (its repeats in two halves, or a second launch): the changes noise "
     "alone makes"),
    ("launch", "one start of a server; a two-stage run confirms its pick on fresh launches of the cell and the "
     "reference, so the choice among many cells cannot flatter it"),
)


def reading_section() -> list[str]:
    """The section's lines, last in report.md."""
    return ["## How to read this report", "",
            *(f"- **{term}**: {meaning}." for term, meaning in TERMS), ""]


def term_words(term: str) -> list[str]:
    """The words in running text that name a term: each ' / ' alternative up to its first mark ('drop ≤ x' ->
    'drop', 'interval `[L%: a–b]`' -> 'interval'; 'A/A' stays whole)."""
    words = []
    for part in term.split(" / "):
        found = re.match(r"[A-Za-z][A-Za-z/\- ]*[A-Za-z]|[A-Za-z]", part.strip())
        if found:
            words.append(found.group(0).strip())
    return words


def term_id(term: str) -> str:
    return "term-" + "-".join(re.findall(r"[a-z0-9]+", term_words(term)[0].lower().replace("/", "-")))


def glossary() -> list[dict[str, object]]:
    """The terms for report.html: its anchor, the term, its meaning (plain text) and the words that link to it."""
    return [{"id": term_id(term), "term": term.replace("`", ""), "meaning": meaning.replace("`", ""),
             "words": term_words(term)} for term, meaning in TERMS]
