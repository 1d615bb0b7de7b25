// Who and what the notes are about (issue 20): without a name, the most mentioned entities
// (`entities` method: type, since, top); with ?name=, the entity's page (`entity` method: type,
// aliases, first and last seen, the notes and memories that mention it most with the line, its
// strongest relations), each relation a link to its own page, and a link to its graph.
"use strict";
(() => {
  const { el, get, params, setParams, failed, noteLink, query, when } = M;
  const main = document.getElementById("main");
  const p = params();
  const TYPES = ["person", "system", "place", "identifier", "tag", "other"];

  const entityLink = (name, label) => el("a", { href: "/entities" + query({ name }), class: "entity" }, label || name);
  const badge = (type) => el("span", { class: `badge type-${type}` }, type);

  function listing() {
    const type = el("select", { name: "type", "aria-label": "type" },
      el("option", { value: "" }, "every type"), TYPES.map((t) => el("option", { value: t }, t)));
    type.value = p.get("type") || "";
    const since = el("input", { type: "date", name: "since", "aria-label": "mentioned since", value: p.get("since") || "" });
    const top = el("select", { name: "top", "aria-label": "how many" }, [50, 100, 200, 500].map((n) => el("option", { value: n }, `top ${n}`)));
    top.value = p.get("top") || "100";
    const find = el("input", { type: "search", name: "find", placeholder: "a name", "aria-label": "find a name", autocomplete: "off" });
    const summary = el("div", { class: "mode", id: "entities-summary" });
    const list = el("div", { id: "entities-list", class: "grid" });
    main.append(el("div", { class: "row" }, el("h1", {}, "Entities"), el("span", { class: "grow" }), find, type, since, top),
      summary, list);
    let rows = [];
    let more = false;
    let next = null; // the next page's cursor (null on the last page)
    const moreButton = el("button", { type: "button", id: "entities-more", hidden: true }, "more");
    main.append(moreButton);
    const show = () => {
      const needle = find.value.trim().toLowerCase();
      const kept = needle ? rows.filter((r) => r.name.toLowerCase().includes(needle)) : rows;
      list.replaceChildren(...kept.map((r) => el("div", { class: "card entity-row", dataset: { name: r.name } },
        el("div", { class: "head" }, entityLink(r.name), " ", badge(r.type)),
        el("div", { class: "small muted" }, `${r.mentions} mention${r.mentions === 1 ? "" : "s"}`))));
      summary.textContent = rows.length
        ? `${kept.length} of the ${rows.length} most mentioned${type.value ? ` (${type.value})` : ""}${more ? " (there are more: \u201cmore\u201d shows the next page)" : ""}`
        : "No entities yet: they are found in notes and memories as they are indexed.";
      moreButton.hidden = !next;
    };
    // a page, or the next one after the cursor (the same type and since), added below
    async function load(cursor) {
      const v = { type: type.value, since: since.value, top: top.value };
      if (!cursor) setParams(v);
      try {
        const res = await get("/api/entities", cursor ? { ...v, cursor } : v);
        rows = cursor ? rows.concat(res.entities) : res.entities;
        more = Boolean(res.has_more); next = res.next_cursor || null; show();
      }
      catch (err) { failed(list, err); }
    }
    moreButton.addEventListener("click", () => { if (next) load(next); });
    for (const c of [type, since, top]) c.addEventListener("change", () => load());
    find.addEventListener("input", show);
    load();
  }

  function source(s) {
    const where = s.kind === "note"
      ? el("span", {}, noteLink(s.path), s.heading ? el("span", { class: "muted" }, ` › ${s.heading}`) : null, el("span", { class: "small muted" }, ` line ${s.line}`))
      : el("span", {}, el("a", { href: "/memories" + query({ id: s.id }) }, `memory #${s.id}`));
    return el("div", { class: "card hit source", dataset: { kind: s.kind } },
      el("div", { class: "head" }, where, el("span", { class: "grow" }),
        el("span", { class: "small muted" }, `${s.mentions}× · ${when(s.date)}`)),
      el("div", { class: "snippet" }, s.text));
  }

  async function page(name) {
    document.title = `${name} · memoryd`;
    const box = el("div", { id: "entity" });
    main.append(el("div", { class: "row" }, el("a", { href: "/entities" }, "← every entity")), box);
    let e;
    try { e = await get("/api/entity", { name, max_tokens: 4000, relations: 25, type: p.get("type") || "" }); }
    catch (err) {
      failed(box, err);
      // a name no entity has: the names it comes closest to, each a link to its page
      const near = (err.data && err.data.suggestions) || [];
      if (near.length) box.append(el("p", { id: "entity-suggestions" }, "Did you mean ",
        near.flatMap((s, i) => [i ? ", " : "", entityLink(s.name), ` (${s.type})`]), "?"));
      return;
    }
    const facts = el("dl", { class: "kv" },
      el("dt", {}, "type"), el("dd", {}, e.type),
      el("dt", {}, "mentions"), el("dd", {}, String(e.mentions)),
      el("dt", {}, "first seen"), el("dd", {}, when(e.first_seen) || "–"),
      el("dt", {}, "last seen"), el("dd", {}, when(e.last_seen) || "–"),
      e.aliases.length ? [el("dt", {}, "also written"), el("dd", {}, e.aliases.join(", "))] : null,
      e.also && e.also.length ? [el("dt", {}, "the name is also written for"), el("dd", {}, e.also.flatMap((a, i) => [i ? ", " : "", entityLink(a.name), ` (${a.type})`]))] : null);
    const rel = e.relations.length
      ? el("table", { class: "relations" },
        el("tr", {}, ["with", "type", "together", "first", "last"].map((h) => el("th", {}, h))),
        e.relations.map((r) => el("tr", {},
          el("td", {}, entityLink(r.name)), el("td", {}, r.type), el("td", {}, String(r.together)),
          el("td", { class: "small" }, when(r.first)), el("td", { class: "small" }, when(r.last)))))
      : el("p", { class: "muted" }, "Mentioned with nothing else yet.");
    box.append(
      el("div", { class: "row" }, el("h1", {}, e.name), badge(e.type), el("span", { class: "grow" }),
        el("a", { href: "/graph" + query({ of: "entities", name: e.name }) }, "Show its graph"),
        el("a", { href: "/search" + query({ query: e.name }) }, "Search for it")),
      facts,
      el("h2", {}, "Mentioned with"), rel,
      el("h2", {}, `Where it is mentioned (${e.sources.length} of ${e.total_sources})`),
      el("div", { id: "entity-sources" }, e.sources.map(source)),
      e.has_more ? el("p", { class: "small muted" }, "The page keeps the notes that mention it most; search for it to see the rest.") : null);
  }

  const name = (p.get("name") || "").trim();
  if (name) page(name); else listing();
})();
