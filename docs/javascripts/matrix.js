// The matrix page: renders window.DM_MATRIX (matrix-data.js, written by publisher/matrix_data.py,
// whose docstring describes the layout) into a table, with filters, folding page groups, cells
// that open their cause in place (click, Enter, Space, touch) and a "my vLLM version" column.
// The whole view lives in the URL's query string, so a view can be shared.
// Every string from the data is escaped by esc() before it enters markup.
(function () {
  "use strict";
  var D, cols, groups, els = {}, state, open = {};
  var FOLD_ABOVE = 300;
  var CMD_CHARS = 260;  // a longer command is cut in the matrix (whole on its page; the search reads it whole)  // more commands than this: page groups start folded (the page stays fast)
  var SHORT_KIND = { "CPU build": "CPU", "CUDA build": "CUDA", "container image": "image", "build": "build" };

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function str(i) { return i >= 0 ? D.strings[i] : ""; }
  function depthWord(verdict, stage) {
    var name = D.stages[stage];
    if (verdict === "PASS" || verdict === "WARN") return (D.depth[name] || [name])[0];
    if (verdict === "FAIL") return "at " + name;
    return verdict.toLowerCase();
  }
  function depthText(verdict, stage) {
    var name = D.stages[stage];
    if (verdict === "PASS" || verdict === "WARN") return (D.depth[name] || ["", name])[1] + (verdict === "WARN" ? " (with a warning)" : "");
    if (verdict === "FAIL") return "fails at " + name;
    return verdict === "SKIP" ? "not checked" : "the check broke";
  }

  // ---- state <-> URL ----
  // not `q`: mkdocs-material opens its own site search for a `?q=` in the URL
  var FIELDS = { find: "dm-search", j: "dm-judgement", v: "dm-verdict", page: "dm-page", kind: "dm-kind", mine: "dm-mine" };
  var CHECKS = { spec: "dm-spec", standin: "dm-standin" };
  function readURL() {
    var p = new URLSearchParams(location.search);
    var s = { all: p.get("all") === "1", open: {}, shut: {} };
    Object.keys(FIELDS).forEach(function (k) { s[k] = p.get(k) || ""; });
    Object.keys(CHECKS).forEach(function (k) { s[k] = p.get(k) === "1"; });
    (p.get("open") || "").split(",").forEach(function (slug) { if (slug) s.open[slug] = true; });
    (p.get("shut") || "").split(",").forEach(function (slug) { if (slug) s.shut[slug] = true; });
    return s;
  }
  function writeURL() {
    var p = new URLSearchParams();
    Object.keys(FIELDS).forEach(function (k) { if (state[k]) p.set(k, state[k]); });
    Object.keys(CHECKS).forEach(function (k) { if (state[k]) p.set(k, "1"); });
    if (state.all) p.set("all", "1");
    ["open", "shut"].forEach(function (k) { var slugs = Object.keys(state[k]); if (slugs.length) p.set(k, slugs.join(",")); });
    var query = p.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
  }
  function fromControls() {
    Object.keys(FIELDS).forEach(function (k) { state[k] = els[k].value.trim(); });
    Object.keys(CHECKS).forEach(function (k) { state[k] = els[k].checked; });
  }
  function toControls() {
    Object.keys(FIELDS).forEach(function (k) {
      var el = els[k];
      if (el.tagName === "SELECT" && state[k] && !Array.prototype.some.call(el.options, function (o) { return o.value === state[k]; })) state[k] = "";
      el.value = state[k];
    });
    Object.keys(CHECKS).forEach(function (k) { els[k].checked = state[k]; });
  }

  // ---- filtering ----
  function filtering() { return !!(state.find || state.j || state.v || state.kind || state.spec || state.standin); }
  function matches(row, g) {
    if (state.page && g[0] !== state.page) return false;
    if (state.find && row.text.indexOf(state.find.toLowerCase()) < 0) return false;
    if (state.j && D.judgements[row[5]] !== state.j) return false;
    if (state.kind && D.kinds[row[3]] !== state.kind) return false;
    if (state.spec && !(row[4] & 1)) return false;
    if (state.standin && !(row[4] & 2)) return false;
    if (state.v && !row[7].some(function (c) { return c && D.verdicts[c[0]] === state.v; })) return false;
    return true;
  }
  function expanded(g) {
    if (state.shut[g[0]]) return false;
    return state.all || filtering() || !!state.page || !!state.open[g[0]] || D.total <= FOLD_ABOVE;
  }

  // ---- "my version" ----
  function mine(row) {
    var v = state.mine, runs = row[9].filter(function (r) { return D.versions[r[0]] === v; });
    if (runs.length) {
      var worst = runs.slice().sort(function (a, b) { return b[1] - a[1]; })[0];
      return { verdict: D.verdicts[worst[1]], word: depthWord(D.verdicts[worst[1]], worst[2]) + " · " + SHORT_KIND[D.buildKinds[worst[3]]],
        text: runs.map(function (r) {
          return D.verdicts[r[1]] + " on the " + D.buildKinds[r[3]] + " of vLLM " + v + ": " + depthText(D.verdicts[r[1]], r[2]);
        }).join("; ") + "." };
    }
    var ri = D.releases.indexOf(v);
    if (ri < 0) return { verdict: "none", word: "no data", text: "No run on vLLM " + v + " and no option history for it." };
    if (D.kinds[row[3]] === "subcommand") return { verdict: "none", word: "no data", text: "No run on vLLM " + v + "; the option history is of vllm serve's options, not of this subcommand's." };
    if (!row[8].length) return { verdict: "none", word: "no options", text: "No run on vLLM " + v + "; the command has no options to look up in the option history." };
    var missing = row[8].filter(function (o) {
      return !D.options[o][1].some(function (r) { return r[0] <= ri && ri <= r[1]; });
    }).map(function (o) { return D.options[o][0]; });
    if (!missing.length) return { verdict: "OPT", word: "options exist", text: "No run on vLLM " + v + ". From the option history: every option of the command exists in vLLM " + v + ", and every value and config key it could read (the model, and values it cannot judge, were not checked)." };
    return { verdict: "FAIL", word: "no " + missing[0], text: "No run on vLLM " + v + ". From the option history: vLLM " + v + "'s vllm serve has no " + missing.join(", ") + " (vLLM would refuse the command: an option at its parser, a value or a config key at the latest when the engine starts)." };
  }

  // ---- markup ----
  var ICON_OPT = "✔";
  function cellButton(row, ci, c) {
    var col = cols[ci];
    if (!c) return '<td class="dm-c"><span class="dm-cell dm-none"><span class="dm-colname">' + esc(col.short) + '</span><span aria-hidden="true">·</span> <span class="dm-v">not run</span></span></td>';
    var verdict = D.verdicts[c[0]], scope = c[4] === 1 ? "older" : c[4] === 2 ? "newer" : "";
    var range = c[2] ? (c[6] >= 0 && str(c[6]).indexOf("option history") >= 0 ? "options " : verdict === "FAIL" ? "ok " : "") + c[2] : "";
    var label = col.label + ": " + verdict + ", " + depthText(verdict, c[1]) + (c[2] ? "; " + str(c[6]) : "") +
      (scope ? "; a build " + scope + " than the page's versions" : "") + ". Show the cause.";
    return '<td class="dm-c"><button type="button" class="dm-cell dm-' + verdict + (scope ? " dm-outside" : "") +
      '" data-c="' + ci + '" aria-expanded="' + (open[row[0]] === String(ci)) + '" aria-label="' + esc(label) + '">' +
      '<span class="dm-colname">' + esc(col.short) + '</span><span class="dm-icon" aria-hidden="true">' + esc(D.icons[verdict]) + '</span> ' +
      '<span class="dm-v">' + verdict + '</span> <span class="dm-depth">' + esc(depthWord(verdict, c[1])) + '</span>' +
      (range ? ' <span class="dm-range">' + esc(range) + '</span>' : "") + (scope ? ' <span class="dm-scope">' + scope + '</span>' : "") + '</button></td>';
  }
  function mineCell(row) {
    var m = mine(row), icon = m.verdict === "OPT" ? ICON_OPT : m.verdict === "none" ? "·" : D.icons[m.verdict];
    return '<td class="dm-c dm-mine"><button type="button" class="dm-cell dm-' + (m.verdict === "OPT" ? "OPT" : m.verdict) +
      '" data-c="m" aria-expanded="' + (open[row[0]] === "m") + '" aria-label="' + esc("vLLM " + state.mine + ": " + m.text) + '">' +
      '<span class="dm-colname">vLLM ' + esc(state.mine) + ' (yours)</span><span class="dm-icon" aria-hidden="true">' + esc(icon) + '</span> ' +
      '<span class="dm-depth">' + esc(m.word) + '</span></button></td>';
  }
  function rowHTML(row) {
    var j = D.judgements[row[5]];
    var cmd = row[1].length > CMD_CHARS ? row[1].slice(0, CMD_CHARS) : row[1];
    var html = '<tr class="dm-row" data-id="' + esc(row[0]) + '"><td class="dm-cmd"><a href="snippets/' + esc(row[0]) + '.html"><code>' +
      esc(cmd) + '</code>' + (cmd !== row[1] ? ' <span class="dm-cut">… ' + (row[1].length - CMD_CHARS) + ' more characters on its page</span>' : "") +
      '</a></td><td class="dm-jc"><button type="button" class="dm-j dm-j-' + j + '" data-c="j" aria-expanded="' +
      (open[row[0]] === "j") + '" aria-label="' + esc("Judgement: " + j + ". Show why.") + '">' + j + '</button></td>';
    if (state.mine) html += mineCell(row);
    for (var i = 0; i < cols.length; i++) html += cellButton(row, i, row[7][i]);
    html += "</tr>";
    if (open[row[0]] !== undefined) html += detailHTML(row, open[row[0]]);
    return html;
  }
  function p(text) { return text ? "<p>" + esc(text) + "</p>" : ""; }
  function detailHTML(row, which) {
    var body;
    if (which === "j") {
      var j = D.judgements[row[5]];
      body = '<p><b>' + esc(j) + '</b>: ' + esc(D.judgementMeaning[j]) + '.</p>' + p(str(row[6]));
    } else if (which === "m") {
      body = '<p><b>vLLM ' + esc(state.mine) + ' (your version)</b></p>' + p(mine(row).text);
    } else {
      var ci = +which, col = cols[ci], c = row[7][ci], verdict = D.verdicts[c[0]];
      body = '<p><b>' + esc(col.label) + '</b>' + (col.commit ? ' · commit <code>' + esc(col.commit) + '</code>' : "") +
        (col.date ? " · " + esc(col.date) : "") + '</p>' +
        '<p><span aria-hidden="true">' + esc(D.icons[verdict]) + '</span> ' + verdict + ": " + esc(depthText(verdict, c[1])) + ".</p>" +
        (str(c[3]) ? "<p>Cause: " + esc(str(c[3])) + "</p>" : "") +
        (c[2] ? "<p>Versions: " + esc(str(c[6])) + ".</p>" : "") +
        (c[5] ? "<p>Model: a random-weight twin of the documented model (same architecture, no real weights).</p>" : "") +
        (c[4] ? "<p>This build is " + (c[4] === 1 ? "older" : "newer") + " than the versions the page is written for: it does not count against the docs.</p>" : "") +
        '<p><a href="snippets/' + esc(row[0]) + ".html#" + esc(col.key) + '">All the evidence for this build</a></p>';
    }
    return '<tr class="dm-detail"><td colspan="' + width() + '"><div class="dm-detail-box" role="region" aria-label="Details">' + body +
      '<button type="button" class="dm-close dm-button" aria-label="Close the details">Close</button></div></td></tr>';
  }
  function width() { return cols.length + 2 + (state.mine ? 1 : 0); }
  function headHTML() {
    var kinds = [], h = '<thead><tr><th rowspan="2" class="dm-h-cmd">Command</th><th rowspan="2">Judgement</th>';
    if (state.mine) h += '<th rowspan="2" class="dm-mine">vLLM ' + esc(state.mine) + "<br><small>your version</small></th>";
    cols.forEach(function (c) {
      if (!kinds.length || kinds[kinds.length - 1][0] !== c.kind) kinds.push([c.kind, 0]);
      kinds[kinds.length - 1][1]++;
    });
    kinds.forEach(function (k) { h += '<th colspan="' + k[1] + '" class="dm-kind">' + esc(k[0]) + "</th>"; });
    h += "</tr><tr>";
    cols.forEach(function (c) {
      h += '<th class="dm-col" scope="col"><span class="dm-col-name">' + esc(c.name) + "</span><br>vLLM " + esc(c.version) +
        (c.commit ? '<br><code>' + esc(c.commit) + "</code>" : "") + (c.date ? "<br><small>" + esc(c.date) + "</small>" : "") + "</th>";
    });
    return h + "</tr></thead>";
  }
  function groupHead(g, rows) {
    var tally = {}, isOpen = expanded(g) && rows.length;
    g[3].forEach(function (r) { var j = D.judgements[r[5]]; tally[j] = (tally[j] || 0) + 1; });
    var counts = D.judgements.filter(function (j) { return tally[j]; }).map(function (j) { return tally[j] + " " + j; }).join(" · ");
    var n = rows.length === g[3].length ? g[3].length + " command" + (g[3].length === 1 ? "" : "s") : rows.length + " of " + g[3].length + " commands";
    return '<tbody class="dm-group dm-group-start" data-page="' + esc(g[0]) + '"><tr class="dm-group-head"><th colspan="' + width() + '">' +
      '<button type="button" class="dm-fold" aria-expanded="' + !!isOpen + '" aria-label="' + esc((isOpen ? "Fold " : "Open ") + g[1]) + '">' +
      (isOpen ? "▾" : "▸") + '</button> <a href="pages/' + esc(g[0]) + '.html">' + esc(g[1]) + "</a>" +
      (g[2] && g[2] !== g[1] ? ' <span class="dm-where">' + esc(g[2]) + "</span>" : "") +
      ' <span class="dm-tally">' + esc(n + " · " + counts) + "</span></th></tr></tbody>";
  }
  // Rows are rendered in chunks: the first FIRST at once, the rest as the reader scrolls near
  // the end (or presses "Show more"), so a filter matching 2,000 commands still answers at once.
  // The first screen is what a filter waits for: 30 rows (two screens) at once, then 60 at a time.
  var FIRST = 30, CHUNK = 60, pending = [], observer = null;
  function render() {
    var shown = 0, pages = 0, parts = [];
    pending = [];
    groups.forEach(function (g) {
      var rows = g[3].filter(function (r) { return matches(r, g); });
      if (!rows.length) return;
      shown += rows.length; pages++;
      pending.push([g, rows, false]);
    });
    els.root.innerHTML = '<table class="dm-matrix" id="dm-matrix">' + colgroup() + headHTML() + "</table>" +
      (shown ? "" : '<p class="dm-empty">No command matches these filters.</p>') +
      '<p class="dm-more" hidden><button type="button" class="dm-button" id="dm-more">Show more</button> <span></span></p>';
    els.table = els.root.querySelector("table");
    els.more = els.root.querySelector(".dm-more");
    els.more.querySelector("button").addEventListener("click", more);
    more(FIRST);
    els.count.textContent = shown + " of " + D.total + " commands on " + pages + " doc page" + (pages === 1 ? "" : "s");
    els.expand.textContent = state.all ? "Fold the pages" : "Open every page";
    if (observer) { observer.disconnect(); observer.observe(els.more); }
    if (!window.DM_READY_MS) window.DM_READY_MS = performance.now();  // benchmarks/matrix_page.py reads it
    document.body.setAttribute("data-dm-ready", "1");
  }
  function more(size) {
    var budget = typeof size === "number" ? size : CHUNK, parts = [];
    while (pending.length && budget > 0) {
      var item = pending[0], g = item[0], isOpen = expanded(g) && item[1].length;
      if (!item[2]) { parts.push(groupHead(g, item[1])); item[2] = true; if (!isOpen) { pending.shift(); budget -= 1; continue; } }
      var take = item[1].splice(0, budget);
      parts.push('<tbody class="dm-group" data-page="' + esc(g[0]) + '">' + take.map(rowHTML).join("") + "</tbody>");
      budget -= take.length;
      if (!item[1].length) pending.shift();
    }
    els.table.insertAdjacentHTML("beforeend", parts.join(""));
    var left = pending.reduce(function (n, item) { return n + (expanded(item[0]) ? item[1].length : 1); }, 0);
    els.more.hidden = !left;
    els.more.querySelector("span").textContent = left ? left + " more row(s) below" : "";
  }
  function colgroup() {
    var h = '<colgroup><col class="dm-w-cmd"><col class="dm-w-j">' + (state.mine ? '<col class="dm-w-cell">' : "");
    for (var i = 0; i < cols.length; i++) h += '<col class="dm-w-cell">';
    return h + "</colgroup>";
  }

  // ---- events ----
  function onChange() { fromControls(); writeURL(); render(); }
  function toggleDetail(button) {
    var tr = button.closest("tr"), id = tr.getAttribute("data-id"), which = button.getAttribute("data-c");
    var row = D.byId[id], next = tr.nextElementSibling;
    if (next && next.classList.contains("dm-detail")) next.remove();
    tr.querySelectorAll("[aria-expanded]").forEach(function (b) { b.setAttribute("aria-expanded", "false"); });
    if (open[id] === which) { delete open[id]; return; }
    open[id] = which;
    button.setAttribute("aria-expanded", "true");
    tr.insertAdjacentHTML("afterend", detailHTML(row, which));
  }
  function onClick(e) {
    var b = e.target.closest("button");
    if (!b || !els.root.contains(b)) return;
    if (b.classList.contains("dm-fold")) {
      var slug = b.closest("tbody").getAttribute("data-page"), g = groups.filter(function (x) { return x[0] === slug; })[0];
      if (expanded(g)) { state.shut[slug] = true; delete state.open[slug]; } else { delete state.shut[slug]; state.open[slug] = true; }
      writeURL(); render();
      var again = els.root.querySelector('tbody.dm-group-start[data-page="' + CSS.escape(slug) + '"] button.dm-fold');
      if (again) again.focus();
    } else if (b.classList.contains("dm-close")) {
      var tr = b.closest("tr").previousElementSibling, opener = tr.querySelector('[aria-expanded="true"]');
      if (opener) { toggleDetail(opener); opener.focus(); }
    } else if (b.hasAttribute("data-c")) {
      toggleDetail(b);
    }
  }

  function setup() {
    els.root = document.getElementById("dm-matrix-root");
    if (!els.root || !window.DM_MATRIX) return;
    D = window.DM_MATRIX;
    document.body.classList.add("dm-wide");  // the matrix takes the whole width (matrix.css)
    cols = D.columns.map(function (c) { return Object.assign({ short: c.name + " · " + SHORT_KIND[c.kind] + " · " + c.version }, c); });
    groups = D.groups;
    D.total = 0; D.byId = {};
    groups.forEach(function (g) {
      g[3].forEach(function (r) { r.text = (r[1] + " " + r[2] + " " + g[1] + " " + g[2]).toLowerCase(); D.byId[r[0]] = r; D.total++; });
    });
    Object.keys(FIELDS).forEach(function (k) { els[k] = document.getElementById(FIELDS[k]); });
    Object.keys(CHECKS).forEach(function (k) { els[k] = document.getElementById(CHECKS[k]); });
    els.count = document.getElementById("dm-count"); els.expand = document.getElementById("dm-expand");
    function fill(select, values) {
      values.forEach(function (v) { var o = document.createElement("option"); o.value = v[0]; o.textContent = v[1]; select.appendChild(o); });
    }
    fill(els.page, groups.map(function (g) { return [g[0], g[1] + (g[2] && g[2] !== g[1] ? " — " + g[2] : "")]; }));
    fill(els.kind, D.kinds.map(function (k) { return [k, k]; }));
    fill(els.mine, D.versions.map(function (v) { return [v, "vLLM " + v]; }));
    state = readURL();
    toControls();
    Object.keys(FIELDS).concat(Object.keys(CHECKS)).forEach(function (k) {
      els[k].addEventListener(els[k].type === "search" ? "input" : "change", onChange);
    });
    els.expand.addEventListener("click", function () { state.all = !state.all; state.shut = {}; if (!state.all) state.open = {}; writeURL(); render(); });
    els.root.addEventListener("click", onClick);
    if ("IntersectionObserver" in window) {
      observer = new IntersectionObserver(function (seen) {
        if (seen.some(function (e) { return e.isIntersecting; }) && pending.length) {
          more();
          observer.unobserve(els.more); observer.observe(els.more);  // still in view: the next chunk
        }
      }, { rootMargin: "1200px 0px" });
    }
    render();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
})();
