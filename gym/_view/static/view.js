// boxgym viewer: filters a run's episode grid and list by outcome, task and flag.
// Licence: Apache-2.0, as boxgym. The same rules as `gym view RUN --list` (gym/_view/_episodes.py).
"use strict";
(function () {
  const form = document.getElementById("filters");
  if (!form) return;
  const shown = document.getElementById("shown");

  function wanted() {
    return {
      outcome: form.elements.outcome.value,
      task: form.elements.task.value.trim(),
      flag: form.elements.flag.value,
    };
  }

  function matches(el, f) {
    const d = el.dataset;
    const flags = d.flags ? d.flags.split(" ") : [];
    if (f.outcome && d.outcome !== f.outcome) return false;
    if (f.task && !d.task.includes(f.task)) return false;
    if (f.flag === "any") return flags.length > 0;
    if (f.flag === "none") return flags.length === 0;
    return !f.flag || flags.includes(f.flag);
  }

  function apply() {
    const f = wanted();
    let count = 0, total = 0;
    for (const el of document.querySelectorAll("[data-outcome]")) {
      const ok = matches(el, f);
      el.classList.toggle("off", !ok);
      if (el.tagName === "TR") { total += 1; if (ok) count += 1; }
    }
    for (const row of document.querySelectorAll("tr[data-task-row]")) {
      row.hidden = Boolean(f.task) && !row.dataset.taskRow.includes(f.task);
    }
    shown.textContent = count + " of " + total + " episodes";
  }

  function remember() {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(wanted())) if (v) params.set(k, v);
    const query = params.toString();
    try { history.replaceState(null, "", query ? "?" + query : location.pathname); } catch (e) { /* file: */ }
  }

  const params = new URLSearchParams(location.search);
  for (const name of ["outcome", "task", "flag"]) {
    if (params.has(name)) form.elements[name].value = params.get(name);
  }
  form.addEventListener("input", function () { apply(); remember(); });
  form.addEventListener("submit", function (event) { event.preventDefault(); apply(); remember(); });
  apply();
})();
