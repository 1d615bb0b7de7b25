// Search as you type: the `search` method with the API's filters; results as notes and
// memories with their matching text highlighted, the mode and every score shown.
"use strict";
(() => {
  const { el, get, params, setParams, debounce, highlighted, noteLink, when } = M;
  const main = document.getElementById("main");
  const FILTERS = ["kind", "mode", "type", "tags", "tier", "namespace", "path", "since", "until"];
  const p = params();
  const input = el("input", { type: "search", id: "q", class: "grow", placeholder: "Search notes and memories…", autofocus: true, value: p.get("query") || "", autocomplete: "off" });
  const field = (name, node) => { node.name = name; node.value = p.get(name) || node.value; return node; };
  const select = (name, options) => field(name, el("select", { "aria-label": name }, options.map(([v, t]) => el("option", { value: v }, t))));
  const text = (name, ph) => field(name, el("input", { type: "text", placeholder: ph, size: 12, "aria-label": name }));
  const controls = [
    select("kind", [["", "notes and memories"], ["chunk", "notes only"], ["memory", "memories only"]]),
    select("mode", [["", "mode: auto"], ["keyword", "keyword"], ["vector", "vector"], ["hybrid", "hybrid"], ["fuzzy", "fuzzy"]]),
    text("type", "type"), text("tags", "tags a,b"),
    select("tier", [["", "any tier"], ["constitutional", "constitutional"], ["critical", "critical"], ["important", "important"], ["normal", "normal"], ["temporary", "temporary"], ["deprecated", "deprecated"]]),
    text("namespace", "namespace"), text("path", "path prefix"), text("since", "since (7d, 2026-01-01)"), text("until", "until"),
  ];
  const status = el("div", { class: "mode", id: "search-status" });
  const results = el("div", { id: "results" });
  main.append(
    el("h1", {}, "Search"),
    el("div", { class: "row" }, input),
    el("div", { class: "row", style: null }, controls),
    status, results,
  );

  let inflight = null;
  let seq = 0;
  async function run() {
    const values = { query: input.value.trim() };
    for (const c of controls) values[c.name] = c.value.trim();
    setParams(values);
    if (!values.query) { results.replaceChildren(); status.textContent = "Type to search."; return; }
    if (inflight) inflight.abort();
    inflight = new AbortController();
    const mine = ++seq;
    try {
      const t0 = performance.now();
      const res = await get("/api/search", values, { signal: inflight.signal });
      if (mine !== seq) return;
      show(res, performance.now() - t0);
    } catch (err) {
      if (err.name === "AbortError") return;
      results.replaceChildren(el("p", { class: "error" }, err.message));
      status.textContent = "";
    }
  }

  function show(res, ms) {
    const n = res.hits.length;
    status.replaceChildren(...[
      el("span", {}, `${n} result${n === 1 ? "" : "s"} · mode `), el("b", { id: "mode" }, res.mode),
      el("span", {}, ` · ${res.took_ms} ms in the daemon, ${Math.round(ms)} ms here`),
      res.corrected_query ? el("span", {}, " · searched for ", el("b", {}, res.corrected_query)) : null,
      res.suggestion ? el("span", {}, " · did you mean ", el("b", {}, res.suggestion), "?") : null,
      res.reason ? el("span", {}, ` · ${res.reason}`) : null,
      res.indexing ? el("span", { id: "indexing" }, ` · the workspace is still being indexed` +
        (res.indexing.total ? ` (${res.indexing.done}/${res.indexing.total} files read)` : "") +
        ": notes not read yet are not found") : null,
      res.model_state === "failed" ? el("span", {}, " · keyword results only: the embedding model failed to load")
        : res.model_state ? el("span", {}, ` · keyword results only: the embedding model is ${res.model_state}`)
        : res.pending_vectors && res.mode === "keyword"
          ? el("span", {}, ` · keyword results only for now: ${res.pending_vectors} text(s) still being embedded`)
        : res.pending_vectors && res.mode === "vector"
          ? el("span", {}, ` · ${res.pending_vectors} text(s) not embedded yet: not found until they are`)
        : res.pending_vectors
          ? el("span", {}, ` · ${res.pending_vectors} text(s) not embedded yet: found by keywords only for now`) : null,
      res.more ? el("span", { id: "more" }, ` · at least ${res.more} more: raise the limit or narrow it`) : null,
      res.terms_ignored ? el("span", {}, ` · the keyword search used the first 64 words; ${res.terms_ignored} more were left out`) : null,
    ].filter(Boolean));
    results.replaceChildren(...res.hits.map(hit));
  }

  function hit(h) {
    const isNote = h.kind === "chunk";
    const title = isNote
      ? noteLink(h.path, h.path)
      : el("a", { href: "/memories" + M.query({ id: h.id }) }, `memory #${h.id}`);
    const where = isNote
      ? el("div", { class: "where" }, (h.heading_path || []).join(" › "), ` · lines ${h.start_line}–${h.end_line}`)
      : el("div", { class: "where" }, `${h.namespace} · ${when(h.created_at)}`, h.source ? ` · ${h.source}` : "");
    const sections = (h.sections || []).length
      ? el("div", { class: "where" }, "also: ", h.sections.map((s, i) => el("span", {}, i ? ", " : "", (s.heading_path || []).join(" › "), ` (${s.score.toFixed(3)})`)))
      : null;
    return el("div", { class: "card hit", dataset: { kind: h.kind } },
      el("div", { class: "head" },
        el("span", { class: "badge" }, isNote ? "note" : h.type), title,
        h.tier && h.tier !== "normal" ? el("span", { class: `badge tier-${h.tier}` }, h.tier) : null,
        (h.tags || []).map((t) => el("span", { class: "badge" }, `#${t}`)),
        el("span", { class: "grow" }),
        el("span", { class: "score", title: "score 0..1 (docs/protocol.md#scores)" }, `score ${h.score.toFixed(3)}`)),
      el("div", { class: "snippet" }, highlighted(h.snippet || h.content, h.highlights)),
      where, sections,
      h.explain ? el("pre", { class: "small" }, JSON.stringify(h.explain, null, 1)) : null);
  }

  const later = debounce(run, 120);
  input.addEventListener("input", later);
  for (const c of controls) c.addEventListener("change", run);
  for (const c of controls) if (c.tagName === "INPUT") c.addEventListener("input", later);
  run();
})();
