// Memories: a timeline by day with the API's filters; edit, validate, change tier and delete
// through the same methods as the socket API (update, validate, promote, delete), each write
// confirmed where it loses something, a delete undone from the page's trash.
"use strict";
(() => {
  const { el, get, post, params, setParams, day, when, toast, failed } = M;
  const main = document.getElementById("main");
  const TIERS = ["constitutional", "critical", "important", "normal", "temporary", "deprecated"];
  const p = params();
  const filters = {};
  const input = (name, ph, size) => (filters[name] = el("input", { type: "text", name, placeholder: ph, size: size || 12, value: p.get(name) || "", "aria-label": name }));
  const tierSel = (filters.tier = el("select", { name: "tier", "aria-label": "tier" },
    el("option", { value: "" }, "any tier"), TIERS.map((t) => el("option", { value: t }, t))));
  tierSel.value = p.get("tier") || "";
  const list = el("div", { id: "timeline" });
  const more = el("button", { id: "more", hidden: true, onclick: () => load(false) }, "Older memories");
  const summary = el("div", { class: "muted small", id: "summary" });
  const trashBox = el("div", { id: "trash" });
  main.append(
    el("h1", {}, "Memories"),
    el("div", { class: "row" }, input("type", "type"), tierSel, input("tags", "tags a,b"),
      input("namespace", "namespace ('*': all)"), input("since", "since (7d)"), input("until", "until"),
      el("button", { onclick: () => load(true) }, "Filter")),
    summary, list, more,
    el("h2", {}, "Deleted here (undo)"), trashBox,
  );
  for (const f of Object.values(filters)) f.addEventListener("change", () => load(true));

  // the next page starts after the last memory shown (the answer's next_cursor), never at a
  // count: a memory added or deleted meanwhile (from this page, or by an agent) moves counts
  let cursor = null;
  let shown = 0;
  let lastDay = null;
  const PAGE = 100;

  function values() {
    const v = {};
    for (const [k, f] of Object.entries(filters)) v[k] = f.value.trim();
    return v;
  }

  async function load(fresh) {
    const v = values();
    if (fresh) { cursor = null; shown = 0; lastDay = null; list.replaceChildren(); setParams(v); }
    try {
      const single = p.get("id");
      if (single && fresh && !Object.values(v).some(Boolean)) {
        const m = await get("/api/memory", { id: single });
        list.append(dayHead(m.created_at), card(m));
        summary.textContent = `memory #${single} · clear the address's id to see all`;
        return;
      }
      const res = await get("/api/memories", cursor ? { ...v, limit: PAGE, cursor } : { ...v, limit: PAGE });
      for (const m of res.items) {
        const d = day(m.created_at);
        if (d !== lastDay) { list.append(dayHead(m.created_at)); lastDay = d; }
        list.append(card(m));
      }
      shown += res.items.length;
      cursor = res.next_cursor || null;
      summary.textContent = `${res.total} memories${cursor ? `, ${shown} shown` : ""}`;
      more.hidden = !cursor;
    } catch (err) { failed(list, err); }
  }

  function dayHead(iso) { return el("div", { class: "day" }, day(iso)); }

  function card(m) {
    const box = el("div", { class: "card memory", id: `memory-${m.id}`, dataset: { id: m.id } });
    render(box, m);
    return box;
  }

  function render(box, m) {
    const tier = el("select", { "aria-label": "tier", class: "tier" }, TIERS.map((t) => el("option", { value: t }, t)));
    tier.value = m.tier;
    tier.addEventListener("change", async () => {
      try { render(box, await post("/api/memory/tier", { id: m.id, tier: tier.value })); toast(`memory #${m.id} is now ${tier.value}`); }
      catch (err) { toast(err.message); tier.value = m.tier; }
    });
    box.replaceChildren(
      el("div", { class: "row" },
        el("span", { class: "badge" }, m.type),
        m.tier !== "normal" ? el("span", { class: `badge tier-${m.tier}` }, m.tier) : null,
        (m.tags || []).map((t) => el("span", { class: "badge" }, `#${t}`)),
        el("span", { class: "grow" }),
        el("span", { class: "meta" }, `#${m.id} · ${m.namespace} · ${when(m.created_at)}`)),
      el("div", { class: "content" }, m.content),
      el("div", { class: "meta" },
        `importance ${m.importance} · confidence ${m.confidence} · used ${m.access_count}× · useful ${m.useful_count}/${m.validation_count}`,
        m.source ? ` · source ${m.source}` : "", m.context ? ` · ${m.context}` : "",
        m.expires_at ? ` · expires ${when(m.expires_at)}` : ""),
      el("div", { class: "actions" },
        el("button", { class: "edit", onclick: () => edit(box, m) }, "Edit"),
        el("button", { class: "useful", onclick: () => validate(box, m, true) }, "Useful"),
        el("button", { class: "not-useful", onclick: () => validate(box, m, false) }, "Not useful"),
        tier,
        el("button", { class: "danger delete", onclick: () => remove(box, m) }, "Delete")),
    );
  }

  function edit(box, m) {
    const content = el("textarea", { name: "content" });
    content.value = m.content;
    const type = el("input", { name: "type", value: m.type, size: 10 });
    const tags = el("input", { name: "tags", value: (m.tags || []).join(", "), size: 24 });
    const importance = el("input", { name: "importance", type: "number", min: 1, max: 10, value: m.importance, style: null });
    const save = async () => {
      // the version the form was opened on: a change made since (an agent, another tab) is a
      // conflict the toast shows, never overwritten
      const changes = { id: m.id, expected_updated_at: m.updated_at };
      if (content.value !== m.content) changes.content = content.value;
      if (type.value.trim() !== m.type) changes.type = type.value.trim();
      const newTags = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
      if (newTags.join(",") !== (m.tags || []).join(",")) changes.tags = newTags;
      if (Number(importance.value) !== m.importance) changes.importance = Number(importance.value);
      if (Object.keys(changes).length === 2) { render(box, m); return; }
      try { render(box, await post("/api/memory/update", changes)); toast(`memory #${m.id} saved`); }
      catch (err) { toast(err.message); }
    };
    box.replaceChildren(content,
      el("div", { class: "row" }, el("label", {}, "type ", type), el("label", {}, "tags ", tags), el("label", {}, "importance ", importance)),
      el("div", { class: "actions" },
        el("button", { class: "primary save", onclick: save }, "Save"),
        el("button", { onclick: () => render(box, m) }, "Cancel")));
    content.focus();
  }

  async function validate(box, m, useful) {
    try {
      const res = await post("/api/memory/validate", { id: m.id, useful });
      const { useful_count, validation_count, confidence } = res;
      Object.assign(m, { useful_count, validation_count, confidence, access_count: m.access_count + 1 });
      render(box, m);
      toast(`recorded: ${useful ? "useful" : "not useful"}${res.promotion_candidate ? " (a promotion candidate)" : ""}`);
    } catch (err) { toast(err.message); }
  }

  async function remove(box, m) {
    const short = m.content.length > 80 ? m.content.slice(0, 80) + "…" : m.content;
    if (!window.confirm(`Delete memory #${m.id}?\n\n${short}`)) return;
    try {
      // only the version shown: a change made since (an agent) is a conflict, not deleted
      const res = await post("/api/memory/delete", { id: m.id, expected_updated_at: m.updated_at });
      box.remove();
      loadTrash();
      toast(`memory #${m.id} deleted`, { label: "Undo", run: () => restore(res.trash_key) });
    } catch (err) { toast(err.message); }
  }

  async function restore(key) {
    try {
      const res = await post("/api/trash/restore", { key });
      toast(`restored (${res.imported} memory, new id)`);
      load(true); loadTrash();
    } catch (err) { toast(err.message); }
  }

  async function loadTrash() {
    try {
      const res = await get("/api/trash");
      if (!res.items.length) { trashBox.replaceChildren(el("p", { class: "muted small" }, "Nothing deleted from this page since the daemon started.")); return; }
      trashBox.replaceChildren(...res.items.map((t) => el("div", { class: "card row" },
        el("span", { class: "grow" }, `#${t.memory.id} `, t.memory.content.slice(0, 120)),
        el("button", { class: "restore", onclick: () => restore(t.key) }, "Restore"))));
    } catch (err) { failed(trashBox, err); }
  }

  load(true);
  loadTrash();
})();
