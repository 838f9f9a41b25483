// Client-side filtering of the matrix: search text, judgement, verdict, page, kind, speculative config,
// stand-in; page groups fold. Works on the static table (no data fetched).
(function () {
  function setup() {
    var table = document.getElementById("dm-matrix");
    if (!table) return;
    var $ = function (id) { return document.getElementById(id); };
    var search = $("dm-search"), judgement = $("dm-judgement"), verdict = $("dm-verdict"), page = $("dm-page"), kind = $("dm-kind"),
        spec = $("dm-spec"), standin = $("dm-standin"), count = $("dm-count");
    var rows = Array.prototype.slice.call(table.querySelectorAll("tr.dm-row"));
    function apply() {
      var q = search.value.trim().toLowerCase(), shown = 0;
      table.querySelectorAll("tbody.dm-group").forEach(function (group) {
        var groupShown = 0, pageOk = !page.value || group.dataset.page === page.value;
        group.querySelectorAll("tr.dm-row").forEach(function (row) {
          var ok = pageOk &&
            (!q || row.dataset.text.indexOf(q) >= 0) &&
            (!judgement.value || row.dataset.judgement === judgement.value) &&
            (!verdict.value || (" " + row.dataset.verdicts + " ").indexOf(" " + verdict.value + " ") >= 0) &&
            (!kind.value || row.dataset.kind === kind.value) &&
            (!spec.checked || row.dataset.spec === "1") &&
            (!standin.checked || row.dataset.standin === "1");
          row.classList.toggle("dm-hidden", !ok);
          if (ok) { groupShown++; shown++; }
        });
        group.style.display = groupShown ? "" : "none";
      });
      count.textContent = shown + " of " + rows.length + " commands";
    }
    [search, judgement, verdict, page, kind, spec, standin].forEach(function (el) {
      el.addEventListener("input", apply); el.addEventListener("change", apply);
    });
    table.querySelectorAll("button.dm-fold").forEach(function (button) {
      button.addEventListener("click", function () {
        var group = button.closest("tbody");
        var folded = group.classList.toggle("dm-folded");
        button.setAttribute("aria-expanded", folded ? "false" : "true");
        button.textContent = folded ? "▸" : "▾";
      });
    });
    apply();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
})();
