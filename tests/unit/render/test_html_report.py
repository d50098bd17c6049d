"""report.html: the escaping of its data block, where the page marks extracted answers and detector evidence, the
paired documents and their flips (pure, on run folders written through the records models), and the page itself in
headless chromium: it draws the run, its flip filter shows the flipped documents with both answers, and hostile model
output stays text (no script from it runs) whether the data is embedded as JSON or compressed."""

import base64
import gzip
import json
from pathlib import Path

import pytest

from benchmarks.html_report import HOSTILE, write_synthetic_run
from evalharness.cli import main
from evalharness.render.html import embedded_payload, json_for_script, render_html
from evalharness.render.html_data import extracted_span, finding_spans, page_data
from tests.headless import browser, open_page, screenshot  # noqa: F401  (browser is a fixture)


def test_json_for_script_escapes_what_could_end_the_block_and_reads_back_unchanged():
    text = json_for_script({"a": HOSTILE})
    for raw in ("<", ">", "&", "\u2028"):
        assert raw not in text
    assert "\\u003c/script\\u003e" in text and "\\u2028" in text
    assert json.loads(text) == {"a": HOSTILE}


@pytest.mark.parametrize("compress", [False, True])
def test_embedded_payload_round_trips(compress):
    data = {"x": [HOSTILE] * 3}
    box = json.loads(embedded_payload(data, compress))
    if compress:
        assert box["encoding"] == "gzip+base64"
        assert json.loads(gzip.decompress(base64.b64decode(box["data"]))) == data
    else:
        assert box == {"encoding": "json", "data": data}


@pytest.mark.parametrize("answer, extracted, filt, span", [
    (" 10 then 10", "10", "first_number", (1, 3)),
    ("3 + 4 = 7. #### 7", "7", "flexible-extract", (16, 17)),  # lm-eval's extractors take the last match
    ("no number", "[invalid]", "strict-match", None),
    ("", None, "none", None),
])
def test_extracted_answer_span(answer, extracted, filt, span):
    assert extracted_span(answer, extracted, filt) == span


@pytest.mark.parametrize("output, evidence, spans", [
    ("a wis wis b", "'wis' x5", [(2, 5), (6, 9)]),
    ("ok --_--- and -_-_-", "2 torn separator runs: '--_--- -_-_-'", [(3, 9), (14, 19)]),
    ("x\n--_---", "60/64 symbols: 'x\\n--_---'", [(2, 8)]),
    ("abcdef", "a long quote: 'abcd…'", [(0, 4)]),
    ("fine", "hit max_tokens on a prompt that asks for a short answer", []),
])
def test_finding_spans_mark_the_detectors_quoted_evidence(output, evidence, spans):
    assert finding_spans(output, evidence) == spans


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html") / "run"
    return write_synthetic_run(folder, cells=4, tasks=2, documents=40, hostile=True, seed=3), folder


def test_page_data_pairs_every_document_and_lists_the_records_flips(small_run):
    run, folder = small_run
    data = page_data(run, folder)
    assert [t["task"] for t in data["tasks"]] == ["task_0", "task_1"]
    for task in data["tasks"]:
        assert len(task["documents"]) == 40 and task["prompts_recorded"] and task["stop_recorded"]
        for cid, answers in task["cells"].items():
            drift = next(t for t in run.cells[cid].drift.tasks if t.task == task["task"])
            flips = [a["flip"] for a in answers]
            assert flips.count("right_to_wrong") == drift.right_to_wrong
            assert flips.count("wrong_to_right") == drift.wrong_to_right
            for doc, answer in zip(task["documents"], answers):
                if answer["flip"] == "right_to_wrong":
                    assert doc["reference"]["score"] == 1.0 and answer["score"] == 0.0
                # the same prompt as the reference's is kept once; the hostile cell's first documents were sent another
                hostile = cid.endswith(".hostile") and doc["doc_id"] < 3
                assert (answer["prompt"] is not None) == hostile
                if hostile:
                    assert HOSTILE in data["strings"][answer["prompt"]]
                assert answer["truncated"] == (answer["finish"] == "length")
    garbage = run.cell_order[-1]
    assert garbage not in data["tasks"][0]["cells"] and data["probes"][garbage][0]["findings"][0]["spans"]
    assert sum(len(t["cells"]) for t in data["tasks"]) == 2 * 2  # cells 1 and 2 answered both tasks


def test_report_html_cli_writes_the_page(small_run, capsys, tmp_path):
    _, folder = small_run
    assert main(["report", str(folder), "--html"]) == 0
    assert "html: " in capsys.readouterr().out and (folder / "report.html").stat().st_size > 100_000
    assert main(["report", str(tmp_path / "nothing"), "--html"]) == 2


def test_the_page_embeds_no_hostile_text_as_markup(small_run):
    run, folder = small_run
    for compress in (False, True):
        page = render_html(run, folder, compress=compress)
        assert "<script>window.__pwned" not in page and "<img src=x" not in page
        assert page.count("<script") == 3  # the data block, Chart.js, the page's own script


# --- in headless chromium -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_hostile_output_stays_text_in_the_browser(browser, small_run, compress, tmp_path):
    run, folder = small_run
    page = tmp_path / "report.html"
    page.write_text(render_html(run, folder, compress=compress), encoding="utf-8")
    open_page(browser, page)
    hostile_cell = run.cell_order[1]
    browser.execute_script(f"const s=document.getElementById('doc-cell'); s.value={json.dumps(hostile_cell)};"
                           "s.dispatchEvent(new Event('change'));")
    assert browser.execute_script("return window.__pwned") is None
    assert browser.execute_script("return document.querySelectorAll('#page img, #page script').length") == 0
    shown = browser.execute_script("return document.getElementById('page').textContent")
    assert "</script><script>window.__pwned=1</script>" in shown  # the text is there, as text
    assert '<img src=x onerror="window.__pwned=2">' in shown
    assert browser.title.startswith("evalharness: synthetic</script>")
    screenshot(browser, f"hostile-{'gzip' if compress else 'json'}.png")


def test_flip_filter_shows_the_flipped_documents_with_both_answers(browser, small_run):
    run, folder = small_run
    page = folder / "report.html"
    page.write_text(render_html(run, folder), encoding="utf-8")
    open_page(browser, page)
    cell = run.cell_order[2]
    drift = next(t for t in run.cells[cell].drift.tasks if t.task == "task_0")
    assert drift.right_to_wrong + drift.wrong_to_right > 0, "the synthetic run must have flips to show"
    browser.execute_script(f"const c=document.getElementById('doc-cell'); c.value={json.dumps(cell)};"
                           "c.dispatchEvent(new Event('change'));"
                           "const f=document.getElementById('doc-filter'); f.value='flips';"
                           "f.dispatchEvent(new Event('change'));")
    cards = browser.find_elements("css selector", "#documents-list article.doc")
    assert len(cards) == drift.right_to_wrong + drift.wrong_to_right
    for card in cards:
        answers = card.find_elements("css selector", "pre.answer")
        assert len(answers) == 2 and all(a.text for a in answers)  # the reference's and the cell's
        assert card.find_elements("css selector", "mark.extracted")
        assert "right → wrong" in card.text or "wrong → right" in card.text
    rows = browser.find_elements("css selector", "#cells-table tbody tr")
    assert [r.get_attribute("data-cell") for r in rows] == run.cell_order
    browser.find_element("css selector", "#cells-table th:nth-child(4)").click()  # sort by tok/s, slowest first
    rows = browser.find_elements("css selector", "#cells-table tbody tr")
    assert rows[0].get_attribute("data-cell") == run.cell_order[0]
    screenshot(browser, "synthetic-flips.png")


def test_the_pages_terms_link_on_first_use_to_how_to_read_it(browser, small_run):
    """Issue 58, 6: terms used before they are defined, or never. report.html ends with every term of the report's
    "How to read" and links each on its first use (the verdict, the recommendation, the cells table's headers)."""
    from evalharness.render.reading import TERMS

    run, folder = small_run
    page = folder / "report.html"
    page.write_text(render_html(run, folder), encoding="utf-8")
    open_page(browser, page)
    terms = browser.execute_script("return [...document.querySelectorAll('#reading dt')].map((d) => [d.id, d.textContent])")
    assert len(terms) == len(TERMS) and len({i for i, _ in terms}) == len(TERMS)
    links = browser.execute_script("return [...document.querySelectorAll('a.term')].map((a) => "
                                   "[a.getAttribute('href'), a.textContent, a.closest('section, th') ? "
                                   "(a.closest('th') ? 'th' : a.closest('section').id) : ''])")
    targets = [href for href, _, _ in links]
    assert len(targets) == len(set(targets)), "a term is linked on its first use only"
    assert all(browser.execute_script(f"return document.getElementById({json.dumps(h[1:])}) !== null") for h in targets)
    assert {where for _, _, where in links} >= {"th"} and len(links) >= 5, links
    assert dict((h, t) for h, t, _ in links).get("#term-inconclusive") == "inconclusive"  # the verdict's word
    header = next(href for href, _, where in links if where == "th")
    browser.find_element("css selector", f"th a.term[href='{header}']").click()
    assert browser.execute_script("return location.hash") == header
    rows = browser.find_elements("css selector", "#cells-table tbody tr")
    assert [r.get_attribute("data-cell") for r in rows] == run.cell_order  # a link in a header does not sort
