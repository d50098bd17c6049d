// report.html's page: draws the run's data (render/html_data.py) embedded in #eh-data. Every string in the data is
// untrusted (model output, logs, task text): it reaches the page only through text nodes (textContent or
// createTextNode) and setAttribute on inert attributes, never through innerHTML or an event attribute.
"use strict";

(function () {
  const PAGE_SIZE = 50; // documents drawn at once: a 20,000-sample run stays quick to show

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "onclick" || name === "onchange") node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  function marked(text, spans, cls, title) {
    // text with the spans [[start, end], ...] wrapped in <mark>: every piece is a text node
    const out = el("span", {});
    let at = 0;
    for (const [start, end] of spans || []) {
      if (start < at) continue;
      out.appendChild(document.createTextNode(text.slice(at, start)));
      out.appendChild(el("mark", {class: cls, title: title}, text.slice(start, end)));
      at = end;
    }
    out.appendChild(document.createTextNode(text.slice(at)));
    return out;
  }

  // --- the glossary: each term linked on its first use (render/reading.py) -----------------------------------------

  function termLinker(glossary) {
    // returns linked(text): text nodes, with the first use on the page of each term's words wrapped in a link to it
    const byWord = new Map();
    for (const g of glossary || []) for (const w of g.words) byWord.set(w.toLowerCase(), g.id);
    const words = [...byWord.keys()].sort((a, b) => b.length - a.length).map((w) => w.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&"));
    const pattern = words.length ? new RegExp(`\\b(${words.join("|")})s?\\b`, "gi") : null;
    const done = new Set();
    return function linked(text) {
      const out = el("span", {});
      let at = 0;
      for (const found of pattern ? String(text).matchAll(pattern) : []) {
        const id = byWord.get(found[1].toLowerCase());
        if (done.has(id)) continue;
        done.add(id);
        out.appendChild(document.createTextNode(text.slice(at, found.index)));
        out.appendChild(el("a", {href: "#" + id, class: "term", onclick: (event) => event.stopPropagation()}, found[0]));
        at = found.index + found[0].length;
      }
      out.appendChild(document.createTextNode(String(text).slice(at)));
      return out;
    };
  }

  function readingSection(data) {
    if (!(data.glossary || []).length) return null;
    return section("reading", "How to read this page", el("dl", {}, data.glossary.flatMap((g) => [
      el("dt", {id: g.id}, g.term), el("dd", {}, g.meaning + ".")])));
  }

  async function loadData() {
    const box = JSON.parse(document.getElementById("eh-data").textContent);
    if (box.encoding === "json") return box.data;
    const binary = atob(box.data);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  const state = {cell: null, task: 0, filter: "all", shown: PAGE_SIZE};

  function section(id, title, ...children) {
    return el("section", {id: id}, el("h2", {}, title), ...children);
  }

  // --- recommendation and Pareto chart ---------------------------------------------------------------------------

  function chartSection(data, select) {
    const chart = data.chart;
    const detail = el("p", {id: "chart-detail", class: "detail"}, "Hover or click a point to see its cell.");
    if (!chart.points.length) return section("pareto", "Pareto: throughput against drift", el("p", {}, "No cell has both a throughput and a drift figure to draw."));
    const canvas = el("canvas", {id: "pareto-canvas", width: 900, height: 420, "aria-label": "Pareto chart"});
    // a range of repeats is written min..max; a bracket is an interval, its level beside its ends
    const describe = (p) => `${p.cell}: ${p.x.toFixed(1)} tok/s` + (p.x_low !== null ? ` (repeats ${p.x_low.toFixed(1)}..${p.x_high.toFixed(1)})` : "") +
      `, drift ${p.y.toFixed(3)}` + (p.y_low !== null ? ` [90%: ${p.y_low.toFixed(3)}, ${p.y_high.toFixed(3)}]` : "") +
      `; ${p.verdict || ""}${p.on_front ? "; on the front" : ""}`;
    const groups = [["reference", (p) => p.reference, "#1f77b4"], ["Pareto front", (p) => p.on_front && !p.reference, "#d62728"],
                    ["dominated", (p) => !p.on_front && !p.reference, "#888888"]];
    const datasets = groups.map(([label, keep, colour]) => ({
      label: label, backgroundColor: colour, borderColor: colour, pointRadius: 6, pointHoverRadius: 9,
      data: chart.points.filter(keep).map((p) => ({x: p.x, y: p.y, point: p})),
    })).filter((d) => d.data.length);
    const intervals = {  // the repeats' tok/s range and the accuracy drop's 90% interval, as grey bars
      id: "intervals",
      beforeDatasetsDraw(c) {
        const ctx = c.ctx, xs = c.scales.x, ys = c.scales.y;
        ctx.save(); ctx.strokeStyle = "#bbbbbb"; ctx.lineWidth = 3;
        for (const p of chart.points) {
          if (p.x_low !== null) { ctx.beginPath(); ctx.moveTo(xs.getPixelForValue(p.x_low), ys.getPixelForValue(p.y)); ctx.lineTo(xs.getPixelForValue(p.x_high), ys.getPixelForValue(p.y)); ctx.stroke(); }
          if (p.y_low !== null) { ctx.beginPath(); ctx.moveTo(xs.getPixelForValue(p.x), ys.getPixelForValue(p.y_low)); ctx.lineTo(xs.getPixelForValue(p.x), ys.getPixelForValue(p.y_high)); ctx.stroke(); }
        }
        ctx.restore();
      },
    };
    if (window.Chart) {
      new window.Chart(canvas, {
        type: "scatter", data: {datasets: datasets}, plugins: [intervals],
        options: {
          animation: false, responsive: false,
          // the intervals decide the bounds too, so a bar is never cut off or lost in an axis chosen for the points
          scales: {x: {title: {display: true, text: chart.x_label}, suggestedMin: Math.min(...chart.points.map((p) => p.x_low ?? p.x)), suggestedMax: Math.max(...chart.points.map((p) => p.x_high ?? p.x))},
                   y: {title: {display: true, text: chart.y_label}, suggestedMin: Math.min(...chart.points.map((p) => p.y_low ?? p.y)), suggestedMax: Math.max(...chart.points.map((p) => p.y_high ?? p.y))}},
          plugins: {tooltip: {callbacks: {label: (item) => describe(item.raw.point)}}},
          onHover: (event, items) => { if (items.length) detail.textContent = describe(datasets[items[0].datasetIndex].data[items[0].index].point); },
          onClick: (event, items) => { if (items.length) select(datasets[items[0].datasetIndex].data[items[0].index].point.cell, describe(datasets[items[0].datasetIndex].data[items[0].index].point)); },
        },
      });
    }
    const list = el("ul", {class: "points"}, chart.points.map((p) => el("li", {}, el("a", {href: "#documents", onclick: () => select(p.cell, describe(p))}, describe(p)))));
    return section("pareto", "Pareto: throughput against drift", canvas, detail,
      el("details", {}, el("summary", {}, "The points as text"), list),
      el("p", {class: "note"}, "Lower right is better. Bars: the kept repeats' lowest..highest tok/s (disturbed repeats set aside), and the pooled accuracy drop's 90% interval."));
  }

  // --- throughput per GPU against interactivity, one curve per cell (its load sweep) -------------------------------

  const LABEL_AT = [[8, 14], [8, -7], [-8, -7], [-8, 14]];  // pixels from a step to its load label, by cell
  const CURVE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];

  function curvesSection(data) {
    const curves = data.curves, title = "Throughput against interactivity";
    if (!curves.cells.length) return section("curves", title, el("p", {}, "No load sweep in this run (throughput.sweep)"));
    const name = (c) => c.cell + (c.reference ? " (reference)" : "") + (c.gpus > 1 ? `, ${c.gpus} GPUs` : "");
    const fixed = (v) => v.toFixed(1);
    const describe = (c, p) => `${name(c)} at ${p.label}: ${fixed(p.y)} tok/s per GPU` + (p.y_low !== null ? ` [90%: ${fixed(p.y_low)}–${fixed(p.y_high)}]` : "") +
      `, ${fixed(p.x)} tok/s per user` + (p.meets === null ? "" : p.meets ? "; SLO met" : "; SLO missed");
    const slo = curves.cells.some((c) => c.points.some((p) => p.meets !== null));
    let next = 0;
    const colours = curves.cells.map((c) => (c.reference ? "#000000" : CURVE_COLOURS[next++ % CURVE_COLOURS.length]));
    const datasets = curves.cells.map((c, i) => ({
      label: name(c), showLine: true, borderColor: colours[i], backgroundColor: colours[i], borderWidth: c.reference ? 4 : 2,
      pointRadius: c.reference ? 6 : 5, pointHoverRadius: 8, pointBorderWidth: 2, order: c.reference ? 0 : 1,
      pointBackgroundColor: c.points.map((p) => (p.meets === false ? "#ffffff" : colours[i])),
      data: c.points.map((p) => ({x: p.x, y: p.y, point: p, cell: c})),
    }));
    // a legend entry only: what a hollow point means
    if (slo) datasets.push({label: "hollow: missed the SLO", data: [], borderColor: "#555555", backgroundColor: "#ffffff", pointBorderWidth: 2, order: 2});
    const detail = el("p", {id: "curves-detail", class: "detail"}, "Hover a point to see its cell and load.");
    const canvas = el("canvas", {id: "curves-canvas", width: 900, height: 420, "aria-label": "throughput per GPU against interactivity chart"});
    const marks = {  // each step's 90% interval as a bar under its point, its load as a label beside it
      id: "curve-marks",
      beforeDatasetsDraw(c) { drawMarks(c, true); },
      afterDatasetsDraw(c) { drawMarks(c, false); },
    };
    function drawMarks(c, bars) {
      const ctx = c.ctx, xs = c.scales.x, ys = c.scales.y;
      ctx.save(); ctx.lineWidth = 3; ctx.globalAlpha = bars ? 0.45 : 1; ctx.font = "11px system-ui, sans-serif";
      curves.cells.forEach((cell, i) => {
        if (!c.isDatasetVisible(i)) return;
        ctx.strokeStyle = ctx.fillStyle = colours[i];
        const at = LABEL_AT[i % LABEL_AT.length];  // each cell's load labels in their own corner, as curves.png has them
        for (const p of cell.points) {
          const x = xs.getPixelForValue(p.x);
          if (!bars) { ctx.textAlign = at[0] > 0 ? "left" : "right"; ctx.fillText(p.label, x + at[0], ys.getPixelForValue(p.y) + at[1]); continue; }
          if (p.y_low === null) continue;
          ctx.beginPath(); ctx.moveTo(x, ys.getPixelForValue(p.y_low)); ctx.lineTo(x, ys.getPixelForValue(p.y_high)); ctx.stroke();
        }
      });
      ctx.restore();
    }
    const all = curves.cells.flatMap((c) => c.points);
    if (window.Chart) {
      new window.Chart(canvas, {
        type: "scatter", data: {datasets: datasets}, plugins: [marks],
        options: {
          animation: false, responsive: false,
          scales: {x: {beginAtZero: true, title: {display: true, text: curves.x_label}, suggestedMax: Math.max(...all.map((p) => p.x)) * 1.1},
                   y: {beginAtZero: true, title: {display: true, text: curves.y_label + " (bars: 90% interval)"}, suggestedMax: Math.max(...all.map((p) => p.y_high ?? p.y)) * 1.05}},
          plugins: {legend: {labels: {usePointStyle: true, generateLabels: (ch) => window.Chart.defaults.plugins.legend.labels.generateLabels(ch)
                      .map((l) => (l.datasetIndex < colours.length ? {...l, fillStyle: colours[l.datasetIndex]} : l))}},  // filled even where a curve's first step is hollow
                    tooltip: {callbacks: {label: (item) => describe(item.raw.cell, item.raw.point)}}},
          onHover: (event, items) => { if (items.length) { const raw = datasets[items[0].datasetIndex].data[items[0].index]; detail.textContent = describe(raw.cell, raw.point); } },
        },
      });
    }
    // the legend as text (each cell's name a text node), each cell's steps folded under it
    const list = el("ul", {id: "curves-legend", class: "curves"}, curves.cells.map((c, i) => el("li", {"data-cell": c.cell},
      el("span", {class: "swatch", style: `background:${colours[i]}`}), el("strong", {}, name(c)), c.stopped ? ` (the sweep stopped: ${c.stopped})` : "",
      el("details", {}, el("summary", {}, `its ${c.points.length} steps as text`), el("ul", {}, c.points.map((p) => el("li", {}, describe(c, p))))))));
    return section("curves", title, curves.point ? el("p", {class: "note"}, `Operating point: ${curves.point}.`) : null, canvas, detail, list,
      el("p", {class: "note"}, "One curve per cell's load sweep, the reference thick and black; upper right is better. Bars: each step's 90% interval of output tok/s per GPU" +
        (slo ? "; a hollow point missed the SLO." : ".")));
  }

  // --- cells table (sortable) ------------------------------------------------------------------------------------

  function tableSection(data, select, linked) {
    const table = data.table;
    const body = el("tbody", {});
    let order = {column: -1, descending: false};
    const draw = () => {
      const rows = table.rows.slice();
      if (order.column >= 0) {
        rows.sort((a, b) => {
          const x = a.columns[order.column][1], y = b.columns[order.column][1];
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
          return order.descending ? -c : c;
        });
      }
      body.replaceChildren(...rows.map((row) => el("tr", {"data-cell": row.cell, class: row.cell === data.reference ? "reference" : null,
        onclick: () => select(row.cell, row.cell)}, row.columns.map(([text]) => el("td", {}, text)))));
    };
    const head = el("tr", {}, table.header.map((name, i) => el("th", {title: "click to sort", onclick: () => {
      order = {column: i, descending: order.column === i ? !order.descending : false};
      head.querySelectorAll("th").forEach((th, j) => th.setAttribute("aria-sort", j === i ? (order.descending ? "descending" : "ascending") : "none"));
      draw();
    }}, linked(name))));
    draw();
    return section("cells", "Cells", el("p", {class: "note"}, "Click a column to sort, a row to see its documents."),
      el("div", {class: "scroll"}, el("table", {id: "cells-table"}, el("thead", {}, head), body)));
  }

  // --- documents paired with the reference ------------------------------------------------------------------------

  const FILTERS = [
    ["all", "all documents", () => true],
    ["flips", "flips (either way)", (d, a) => a.flip !== null && a.flip !== undefined],
    ["right_to_wrong", "right → wrong", (d, a) => a.flip === "right_to_wrong"],
    ["wrong_to_right", "wrong → right", (d, a) => a.flip === "wrong_to_right"],
    ["truncated", "truncated (either side)", (d, a) => a.truncated || d.reference.truncated],
    ["empty", "empty answer (either side)", (d, a) => a.empty || d.reference.empty],
    ["stop_cut", "cut by a stop string (either side)", (d, a) => a.stop_cut || d.reference.stop_cut],
    ["invalid", "invalid call or JSON (either side)", (d, a) => a.invalid || d.reference.invalid],
    ["refused", "refused by the engine (either side)", (d, a) => !!(a.refused || d.reference.refused)],
  ];

  function answerBox(side, sample, prompt, data) {
    const meta = [`score ${sample.score === null ? "—" : +sample.score.toFixed(3)}` + (sample.repeats > 1 ? ` (mean of ${sample.repeats} repeats)` : ""),
      sample.finish ? `finish ${sample.finish}` : null, sample.stop ? `stopped at ${JSON.stringify(sample.stop)}` : null,
      sample.truncated ? "TRUNCATED" : null, sample.empty ? "EMPTY" : null].filter(Boolean).join("; ");
    return el("div", {class: "side " + side},
      el("h4", {}, side === "reference" ? "reference" : "this cell"),
      prompt === undefined ? null : prompt,
      sample.reasoning ? el("details", {class: "reasoning"}, el("summary", {}, `reasoning (${sample.reasoning.length} characters)`), el("pre", {}, sample.reasoning)) : null,
      el("pre", {class: "answer"}, sample.mark ? marked(sample.answer, [sample.mark], "extracted", "the scorer's extracted answer") : sample.answer),
      el("p", {class: "meta"}, sample.extracted !== null ? el("span", {}, "extracted: ", el("mark", {class: "extracted"}, sample.extracted), "; ") : null, meta),
      sample.errors && sample.errors.length ? el("ul", {class: "schema-errors"}, sample.errors.map((e) => el("li", {}, el("mark", {class: "schema-error"}, e)))) : null);
  }

  function promptBlock(index, data, recorded) {
    if (index === null || index === undefined) return el("p", {class: "meta"}, recorded ? "prompt: the same as the reference's" : "prompt not recorded in this run (older runs kept only its hash)");
    const text = data.strings[index];
    return el("details", {class: "prompt"}, el("summary", {}, `prompt (${text.length} characters)`), el("pre", {}, text));
  }

  function documentsSection(data) {
    const holder = el("div", {id: "documents-list"});
    const cells = data.cells.filter((c) => data.tasks.some((t) => t.cells[c]));
    if (!data.tasks.length || !cells.length) return section("documents", "Documents, paired with the reference", el("p", {}, "No cell answered a task the reference answered."));
    if (!state.cell || !cells.includes(state.cell)) state.cell = cells[0];
    const cellSelect = el("select", {id: "doc-cell", onchange: () => { state.cell = cellSelect.value; state.shown = PAGE_SIZE; draw(); }},
      cells.map((c) => el("option", {value: c}, c)));
    const taskSelect = el("select", {id: "doc-task", onchange: () => { state.task = +taskSelect.value; state.shown = PAGE_SIZE; draw(); }},
      data.tasks.map((t, i) => el("option", {value: i}, t.task)));
    const filterSelect = el("select", {id: "doc-filter", onchange: () => { state.filter = filterSelect.value; state.shown = PAGE_SIZE; draw(); }});
    function draw() {
      cellSelect.value = state.cell; taskSelect.value = String(state.task);
      const task = data.tasks[state.task];
      const answers = task.cells[state.cell] || [];
      const pairs = task.documents.map((d, i) => [d, answers[i]]).filter(([, a]) => a);
      filterSelect.replaceChildren(...FILTERS.map(([key, label, keep]) => {
        const n = pairs.filter(([d, a]) => keep(d, a)).length;
        const disabled = key === "stop_cut" && !task.stop_recorded;
        return el("option", {value: key, disabled: disabled}, `${label}: ${disabled ? "not recorded in this run" : n}`);
      }));
      filterSelect.value = state.filter;
      const keep = FILTERS.find(([key]) => key === state.filter)[2];
      const chosen = pairs.filter(([d, a]) => keep(d, a));
      const cards = chosen.slice(0, state.shown).map(([d, a]) => el("article", {class: "doc" + (a.flip ? " " + a.flip : ""), "data-key": d.key},
        el("h3", {}, `${d.subtask} document ${d.doc_id}`, d.target !== null ? `; target ${d.target}` : "",
          a.flip ? el("span", {class: "flip"}, a.flip === "right_to_wrong" ? " right → wrong" : " wrong → right") : null),
        el("div", {class: "pair"}, answerBox("reference", d.reference, promptBlock(d.prompt, data, task.prompts_recorded), data),
          answerBox("cell", a, a.prompt !== null && a.prompt !== undefined ? promptBlock(a.prompt, data, true) : el("p", {class: "meta"}, task.prompts_recorded ? "prompt: the same as the reference's" : ""), data))));
      const more = chosen.length > state.shown ? el("button", {onclick: () => { state.shown += PAGE_SIZE; draw(); }}, `show ${Math.min(PAGE_SIZE, chosen.length - state.shown)} more of ${chosen.length - state.shown}`) : null;
      holder.replaceChildren(el("p", {class: "count", id: "doc-count"}, `${chosen.length} of ${pairs.length} documents of ${task.task} (${task.metric || "headline"}) in ${state.cell} against ${data.reference}`),
        ...cards, more);
    }
    state.redrawDocuments = draw;
    draw();
    return section("documents", "Documents, paired with the reference",
      el("p", {class: "note"}, "Each document's answer in the chosen cell beside the reference's; the scorer's extracted answer is highlighted, reasoning folded."),
      el("div", {class: "controls"}, el("label", {}, "cell ", cellSelect), el("label", {}, " task ", taskSelect), el("label", {}, " show ", filterSelect)), holder);
  }

  // --- tool calls and structured output --------------------------------------------------------------------------

  function callsSection(data) {
    if (!data.calls || !data.calls.tables.length) return null;
    return section("calls", "Calls and structured output", el("p", {class: "note"}, data.calls.note),
      data.calls.tables.map((table) => el("div", {class: "calls-task", "data-task": table.task},
        el("h3", {}, `${table.task} (${table.valid_word})`),
        el("div", {class: "scroll"}, el("table", {class: "calls-table"},
          el("thead", {}, el("tr", {}, data.calls.header.map((h) => el("th", {}, h === "valid" ? table.valid_word : h)))),
          el("tbody", {}, table.rows.map((row) => el("tr", {}, row.map((cellText, i) =>
            el("td", {class: cellText.startsWith("worse") ? "worse" : null},
              i === 0 && cellText === data.reference ? `${cellText} (reference)` : cellText))))))))));
  }

  // --- by length (issue 39): plain text from render/length.py, inserted as text ---------------------------------

  function plainTable(table, cls, data) {
    return [el("p", {class: "note"}, table.note),
      el("div", {class: "scroll"}, el("table", {class: cls},
        el("thead", {}, el("tr", {}, table.header.map((h) => el("th", {}, h)))),
        el("tbody", {}, table.rows.map((row) => el("tr", {"data-cell": row[0]}, row.map((cellText, i) =>
          el("td", {class: /^(worse|flagged)/.test(cellText) ? "worse" : null},
            i === 0 && cellText === data.reference ? `${cellText} (reference)` : cellText)))))))];
  }

  // every measure's section (evalharness/measures/): its tables as plain text, inserted as text
  function measureSections(data) {
    return (data.measures || []).map((m) =>
      section(`measure-${m.key}`, m.title, ...m.tables.map((t) => plainTable(t, `measure-table ${m.key}`, data))));
  }

  function lengthSection(data) {
    const table = data.length;
    if (!table || !table.rows.length) return null;
    return section("length", "By length", plainTable(table, "length-table", data),
      table.holds.length ? el("p", {}, table.holds_note) : null,
      table.holds.length ? el("ul", {class: "length-holds"}, table.holds.map(([cid, said]) =>
        el("li", {}, el("strong", {}, cid), ": ", said))) : null);
  }

  // --- garbage probes ---------------------------------------------------------------------------------------------

  function probesSection(data) {
    const cells = Object.keys(data.probes);
    if (!cells.length) return null;
    return section("probes", "Garbage probes", el("p", {class: "note"}, "The probe answers a detector marked; what each detector quoted as evidence is marked in the text."),
      cells.map((cid) => el("div", {class: "probe-cell"}, el("h3", {}, cid),
        data.probes[cid].map((p) => el("article", {class: "probe", "data-probe": p.id},
          el("h4", {}, `probe ${p.id}`), el("p", {class: "meta"}, "prompt: ", p.prompt),
          el("div", {class: "pair"},
            el("div", {class: "side reference"}, el("h4", {}, "reference"), el("pre", {}, p.reference_output === null ? "(no reference answer recorded)" : p.reference_output)),
            el("div", {class: "side cell"}, el("h4", {}, "this cell" + (p.finish ? ` (finish ${p.finish})` : "")),
              el("pre", {class: "probe-output"}, marked(p.output, mergeSpans(p.findings), "finding", "a detector's evidence")))),
          el("ul", {class: "findings"}, p.findings.map((f) => el("li", {}, el("strong", {}, `${f.detector} (${f.strength})`), ": ", f.evidence))))))));
  }

  function mergeSpans(findings) {
    const spans = findings.flatMap((f) => f.spans).sort((a, b) => a[0] - b[0]);
    const out = [];
    for (const [s, e] of spans) {
      if (out.length && s <= out[out.length - 1][1]) out[out.length - 1][1] = Math.max(e, out[out.length - 1][1]);
      else out.push([s, e]);
    }
    return out;
  }

  // --- settings diff between two cells ----------------------------------------------------------------------------

  function settingsSection(data) {
    if (data.cells.length < 2) return null;
    const a = el("select", {id: "diff-a", onchange: () => draw()}, data.cells.map((c) => el("option", {value: c}, c)));
    const b = el("select", {id: "diff-b", onchange: () => draw()}, data.cells.map((c) => el("option", {value: c}, c)));
    a.value = data.cells[0]; b.value = data.cells[1];
    const holder = el("div", {id: "diff-table"});
    function draw() {
      if (a.value === b.value) { holder.replaceChildren(el("p", {}, "Choose two different cells.")); return; }
      const forward = data.settings[`${a.value}|${b.value}`];
      const rows = forward || (data.settings[`${b.value}|${a.value}`] || []).map(([k, x, y, asked]) => [k, y, x, asked]);
      holder.replaceChildren(rows.length ? el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "setting"), el("th", {}, a.value), el("th", {}, b.value), el("th", {}, ""))),
        el("tbody", {}, rows.map(([k, x, y, asked]) => el("tr", {}, el("td", {}, k), el("td", {}, x === null ? "(not set)" : x), el("td", {}, y === null ? "(not set)" : y),
          el("td", {}, asked ? "asked" : el("strong", {}, "not asked")))))) : el("p", {}, "Same flags, variables and resolved settings."));
    }
    draw();
    return section("settings", "Settings that differ between two cells",
      el("p", {class: "note"}, "Flags, environment and what each engine resolved; 'not asked' marks a resolved difference that none of the flags or variables in which the cells differ names."),
      el("div", {class: "controls"}, a, " vs ", b), holder);
  }

  // --- the page ---------------------------------------------------------------------------------------------------

  async function main() {
    const started = performance.now();
    const data = await loadData();
    const page = document.getElementById("page");
    const select = (cell, text) => {
      const detail = document.getElementById("chart-detail");
      if (detail) detail.textContent = text;
      document.querySelectorAll("#cells-table tr[data-cell]").forEach((tr) => tr.classList.toggle("selected", tr.getAttribute("data-cell") === cell));
      const cellSelect = document.getElementById("doc-cell");
      if (cellSelect && [...cellSelect.options].some((o) => o.value === cell)) { state.cell = cell; state.shown = PAGE_SIZE; state.redrawDocuments(); }
    };
    const linked = termLinker(data.glossary);  // called in the page's order: the first use is linked
    page.replaceChildren(
      el("h1", {}, data.title), el("p", {class: "summary"}, data.summary),
      (data.verdict || []).length ? el("section", {id: "verdict"}, el("blockquote", {class: "verdict"}, data.verdict.map((line) => el("p", {}, linked(line))))) : null,
      el("section", {id: "recommendation"}, el("p", {class: "recommendation"}, data.recommendation ? linked(data.recommendation) : "No recommendation: the run has no finished reference and other cell."),
        data.launch ? el("details", {}, el("summary", {}, "its launch command"), el("pre", {}, data.launch)) : null),
      chartSection(data, select), curvesSection(data), tableSection(data, select, linked), callsSection(data), ...measureSections(data), lengthSection(data), documentsSection(data), probesSection(data), settingsSection(data),
      data.notes.length ? section("notes", "Notes", el("ul", {}, data.notes.map((n) => el("li", {}, n)))) : null, readingSection(data));
    document.body.setAttribute("data-ready", String(Math.round(performance.now() - started)));
  }

  main().catch((error) => {
    document.getElementById("page").replaceChildren(el("p", {class: "error"}, "This page could not draw the run: " + error));
    document.body.setAttribute("data-error", String(error));
  });
})();
