// boxgym viewer: sorts tables, filters and searches a run's episodes, and keeps the page
// of a running run up to date. Licence: Apache-2.0, as boxgym.
// The filters follow the same rules as `gym view RUN --list` (gym/_view/_episodes.py):
// the task filter ignores case; a flag no episode carries is said, never silently empty.
"use strict";
(function () {
  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  const NUMBER = /^-?\d+(\.\d+)?(e-?\d+)?$/i;

  // -- the URL keeps the filters and the sort order ------------------------------------

  function setParam(name, value) {
    const params = new URLSearchParams(location.search);
    if (value) params.set(name, value); else params.delete(name);
    const query = params.toString();
    try { history.replaceState(null, "", query ? "?" + query : location.pathname); } catch (e) { /* file: */ }
  }

  // -- sorting: click a header; numbers as numbers, text in natural order --------------

  function cellValue(row, index) {
    const cell = row.cells[index];
    if (!cell) return "";
    return cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent.trim();
  }

  function compareValues(a, b) {
    if (a === "" || b === "") return a === b ? 0 : (a === "" ? 1 : -1);  // empty last
    if (NUMBER.test(a) && NUMBER.test(b)) return parseFloat(a) - parseFloat(b);
    return collator.compare(a, b);
  }

  function sortTable(table, key) {
    const desc = key.startsWith("-");
    const name = desc ? key.slice(1) : key;
    const headers = [...table.tHead.rows[0].cells];
    const index = headers.findIndex(th => th.dataset.key === name);
    if (index < 0) return false;
    const body = table.tBodies[0];
    const rows = [...body.rows];
    rows.sort((x, y) => {
      const order = compareValues(cellValue(x, index), cellValue(y, index));
      return desc ? -order : order;
    });
    for (const row of rows) body.appendChild(row);
    headers.forEach((th, i) => {
      th.removeAttribute("aria-sort");
      if (i === index) th.setAttribute("aria-sort", desc ? "descending" : "ascending");
    });
    table.dataset.sorted = key;
    return true;
  }

  function sortable(table) {
    const param = table.dataset.sortParam || "sort";
    for (const th of table.tHead.rows[0].cells) {
      if (!th.dataset.key) continue;
      th.classList.add("sorter");
      th.tabIndex = 0;
      const go = () => {
        const key = table.dataset.sorted === th.dataset.key ? "-" + th.dataset.key : th.dataset.key;
        if (sortTable(table, key)) setParam(param, key);
      };
      th.addEventListener("click", go);
      th.addEventListener("keydown", e => { if (e.key === "Enter") go(); });
    }
    const wanted = new URLSearchParams(location.search).get(param);
    if (wanted) sortTable(table, wanted);
  }

  document.querySelectorAll("table.sortable").forEach(sortable);

  // -- a run's filters and search -------------------------------------------------------

  const form = document.getElementById("filters");
  if (!form) return;
  const shown = document.getElementById("shown");
  const problem = document.getElementById("filter-problem");
  const searchUrl = form.dataset.searchUrl;
  let found = null;  // episode ids the server's search matched (null: no search)
  let searchNote = "";
  let asked = 0;

  function wanted() {
    return {
      q: form.elements.q.value.trim(),
      outcome: form.elements.outcome.value,
      task: form.elements.task.value.trim(),
      flag: form.elements.flag.value,
    };
  }

  function flagsHere() {
    const names = new Set();
    for (const el of document.querySelectorAll("tr[data-outcome]")) {
      if (el.dataset.flags) el.dataset.flags.split(" ").forEach(f => names.add(f));
    }
    return [...names].sort();
  }

  function words(el) {  // what a static page can search: task, outcome, flags
    const d = el.dataset;
    return (d.task + " " + d.outcome + " " + d.flags).toLowerCase();
  }

  function matches(el, f) {
    const d = el.dataset;
    const flags = d.flags ? d.flags.split(" ") : [];
    if (f.q) {
      if (found !== null) { if (!found.has(d.id)) return false; }
      else if (!f.q.toLowerCase().split(/\s+/).every(w => words(el).includes(w))) return false;
    }
    if (f.outcome && d.outcome !== f.outcome) return false;
    if (f.task && !d.task.toLowerCase().includes(f.task.toLowerCase())) return false;
    if (f.flag === "any") return flags.length > 0;
    if (f.flag === "none") return flags.length === 0;
    return !f.flag || flags.includes(f.flag);
  }

  function say(text) {
    problem.textContent = text;
    problem.hidden = !text;
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
      row.hidden = Boolean(f.task) && !row.dataset.taskRow.toLowerCase().includes(f.task.toLowerCase());
    }
    shown.textContent = count + " of " + total + " episodes";
    const here = flagsHere();
    if (f.flag && f.flag !== "any" && f.flag !== "none" && !here.includes(f.flag)) {
      say("no flag named " + f.flag + " in this run; flags here: " + (here.join(", ") || "none") + " (or any, none)");
    } else {
      say(searchNote);
    }
  }

  function remember() {
    for (const [k, v] of Object.entries(wanted())) setParam(k, v);
  }

  async function search() {
    const q = wanted().q;
    const mine = ++asked;
    if (!q || !searchUrl) { found = null; searchNote = ""; apply(); return; }
    try {
      const answer = await fetch(searchUrl + "&q=" + encodeURIComponent(q), { cache: "no-store" });
      if (!answer.ok) throw new Error("the viewer answered " + answer.status);
      const data = await answer.json();
      if (mine !== asked) return;  // a newer search is under way
      found = new Set(data.ids);
      searchNote = data.more ? "more episodes match than were listed: add words" : (data.note || "");
    } catch (e) {
      if (mine !== asked) return;
      found = null;
      searchNote = "search failed (" + e.message + "): task, outcome and flags only";
    }
    apply();
  }

  let timer = 0;
  function changed(event) {
    remember();
    if (event && event.target === form.elements.q) {
      clearTimeout(timer);
      timer = setTimeout(search, 250);
    } else {
      apply();
    }
  }

  const params = new URLSearchParams(location.search);
  for (const name of ["q", "outcome", "task", "flag"]) {
    if (!params.has(name)) continue;
    const field = form.elements[name];
    const value = params.get(name);
    if (field.tagName === "SELECT" && ![...field.options].some(o => o.value === value)) {
      field.add(new Option(value, value));  // an unknown flag: kept, and said so by apply()
    }
    field.value = value;
  }
  form.addEventListener("input", changed);
  form.addEventListener("submit", function (event) { event.preventDefault(); remember(); search(); });
  if (wanted().q) search(); else apply();

  // -- live: poll a running run's status; reload the parts that changed -----------------

  const status = document.getElementById("status");
  if (!status || !status.dataset.statusUrl) return;
  const PARTS = ["status", "results", "grid", "episodes", "task-ids"];

  function replaceParts(doc) {
    for (const id of PARTS) {
      const now = document.getElementById(id), next = doc.getElementById(id);
      if (!now || !next) continue;
      now.replaceWith(document.adoptNode(next));
      if (next.matches("table.sortable")) sortable(next);  // sorted as the URL says
    }
    const select = form.elements.flag, fresh = doc.getElementById("flag-select");
    if (fresh) {
      const value = select.value;
      select.replaceChildren(...[...fresh.options].map(o => new Option(o.text, o.value)));
      if (![...select.options].some(o => o.value === value)) select.add(new Option(value, value));
      select.value = value;
    }
  }

  async function refresh() {
    const answer = await fetch(location.pathname, { cache: "no-store" });
    if (!answer.ok) return;
    replaceParts(new DOMParser().parseFromString(await answer.text(), "text/html"));
    if (wanted().q) await search(); else apply();
  }

  async function poll() {
    const line = document.getElementById("status");
    let data;
    try {
      const answer = await fetch(line.dataset.statusUrl, { cache: "no-store" });
      if (!answer.ok) throw new Error(String(answer.status));
      data = await answer.json();
    } catch (e) {
      setTimeout(poll, 10000);  // the viewer may be restarting: try again later
      return;
    }
    if (data.version !== line.dataset.version) await refresh();
    if (data.live) setTimeout(poll, 1000 * data.poll_s);
  }

  if (status.dataset.state === "running") setTimeout(poll, 1000);
})();
