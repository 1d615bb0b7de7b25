// A note's neighbourhood (links and backlinks, `graph` method), or an entity's (who and what
// is mentioned with it, `related` method: ?of=entities&name=), drawn with Cytoscape: click a
// node to centre the graph on it, double-click to read it (a note) or open its page (an entity). Nodes sit in rings by distance from
// the centre (rings() below), sized by their number of links; labels appear as you zoom in or
// hover (the centre's always), so a thousand nodes stay readable.
"use strict";
(() => {
  const { el, get, params, setParams, failed, noteLink, query } = M;
  const main = document.getElementById("main");
  main.classList.add("wide");
  const p = params();
  const of = el("select", { name: "of", "aria-label": "graph of" }, el("option", { value: "notes" }, "notes and links"), el("option", { value: "entities" }, "entities mentioned together"));
  of.value = p.get("of") === "entities" ? "entities" : "notes";
  const pathIn = el("input", { type: "text", name: "path", list: "note-paths", size: 40, placeholder: "a note's path or name", value: (of.value === "entities" ? p.get("name") : p.get("path")) || "" });
  const depth = el("select", { name: "depth", "aria-label": "depth" }, [1, 2, 3, 4].map((d) => el("option", { value: d }, `${d} link${d > 1 ? "s" : ""} away`)));
  depth.value = p.get("depth") || "2";
  const limit = el("select", { name: "limit", "aria-label": "limit" }, [100, 300, 500, 1000, 2000].map((n) => el("option", { value: n }, `at most ${n} nodes`)));
  limit.value = p.get("limit") || "500";
  const datalist = el("datalist", { id: "note-paths" });
  const info = el("div", { id: "graph-info", class: "small muted" });
  const box = el("div", { id: "graph" });
  main.append(el("div", { class: "row" }, el("h1", {}, "Graph"), el("span", { class: "grow" }),
    of, pathIn, depth, limit, el("button", { onclick: () => draw(pathIn.value) }, "Show")), datalist, info, box);
  for (const c of [depth, limit]) c.addEventListener("change", () => draw(pathIn.value));
  of.addEventListener("change", () => { pathIn.value = ""; suggest(); });
  pathIn.addEventListener("keydown", (e) => { if (e.key === "Enter") draw(pathIn.value); });

  const style = [
    { selector: "node", style: {
      "background-color": "#7d8fb8", "label": "data(label)", "font-size": 11, "color": "#555",
      "min-zoomed-font-size": 9, "text-valign": "bottom", "text-margin-y": 3,
      "width": "mapData(degree, 0, 30, 8, 34)", "height": "mapData(degree, 0, 30, 8, 34)" } },
    { selector: "node[kind = 'attachment']", style: { "background-color": "#b7a36b", "shape": "round-rectangle" } },
    { selector: "node[kind = 'missing']", style: { "background-color": "#d9d9d9", "border-width": 1, "border-color": "#b42318" } },
    { selector: "node[kind = 'entity']", style: { "background-color": "#7fb08a", "shape": "diamond" } },
    { selector: "node.center", style: { "background-color": "#2f5fd0", "font-weight": "bold", "font-size": 14, "min-zoomed-font-size": 0, "color": "#222" } },
    { selector: "node.near", style: { "min-zoomed-font-size": 0 } },
    { selector: "edge", style: { "width": 1, "line-color": "#c6ccd8", "curve-style": "haystack", "opacity": 0.8 } },
    { selector: "edge[kind = 'embed']", style: { "line-style": "dashed" } },
    { selector: "edge[together]", style: { "width": "mapData(together, 1, 20, 1, 6)" } },
    { selector: ".faded", style: { "opacity": 0.15 } },
    { selector: "node:selected", style: { "border-width": 3, "border-color": "#2f5fd0" } },
  ];
  let cy = null;
  // Cytoscape injects a <style> for its container unless this id exists; the CSP forbids inline
  // styles, and app.css holds that rule already
  document.head.append(el("meta", { id: "__________cytoscape_stylesheet", name: "cytoscape" }));

  // Rings by distance from the centre: the centre, then its links and backlinks, then theirs;
  // a band wider than one ring fills several, each node placed near the nodes of the band
  // before it that it links to (so branches stay together). Computed here in one pass: no
  // force layout (seconds at a thousand nodes, and a different picture on every redraw).
  const GAP = 26;
  function rings(g) {
    const pos = new Map();
    const angle = new Map();
    const near = new Map(g.nodes.map((x) => [x.id, []]));
    for (const e of g.edges) { near.get(e.source)?.push(e.target); near.get(e.target)?.push(e.source); }
    const bands = new Map();
    for (const x of g.nodes) { if (!bands.has(x.depth)) bands.set(x.depth, []); bands.get(x.depth).push(x); }
    let radius = 0;
    for (const depth of [...bands.keys()].sort((a, b) => a - b)) {
      const band = bands.get(depth);
      if (depth === 0) { for (const x of band) { pos.set(x.id, { x: 0, y: 0 }); angle.set(x.id, 0); } radius = 70; continue; }
      const parentAngle = (x) => {
        const as = near.get(x.id).filter((y) => angle.has(y)).map((y) => angle.get(y));
        if (!as.length) return Math.PI * 2;
        const sx = as.reduce((a, t) => a + Math.cos(t), 0), sy = as.reduce((a, t) => a + Math.sin(t), 0);
        return (Math.atan2(sy, sx) + Math.PI * 2) % (Math.PI * 2);
      };
      const keyed = band.map((x) => [parentAngle(x), x]).sort((a, b) => a[0] - b[0]);
      let i = 0;
      while (i < keyed.length) {
        const cap = Math.max(8, Math.floor((2 * Math.PI * radius) / GAP));
        const ring = keyed.slice(i, i + cap);
        ring.forEach(([, x], k) => {
          const t = (2 * Math.PI * k) / ring.length + (i ? 0.5 / ring.length : 0);
          pos.set(x.id, { x: radius * Math.cos(t), y: radius * Math.sin(t) });
          angle.set(x.id, t);
        });
        i += cap;
        radius += GAP;
      }
      radius += GAP;
    }
    return pos;
  }

  // a note's graph as the `graph` method gives it; an entity's from `related`, in that shape: a
  // page of the walk at a time (WALK_TOKENS), "more" adds the next (its next_cursor) to it
  const WALK_TOKENS = 8000;
  let walk = null; // the walk's pages so far: { asked, name, nodes, edges, cursor, truncated }
  async function fetchGraph(name, more) {
    if (of.value !== "entities") {
      setParams({ path: name, depth: depth.value, limit: limit.value });
      return get("/api/graph", { path: name, depth: depth.value, limit: limit.value });
    }
    setParams({ of: "entities", name, depth: depth.value });
    const args = { name, depth: Math.min(3, Number(depth.value)), top: 10, max_tokens: WALK_TOKENS };
    const next = more && walk && walk.cursor && (walk.asked === name || walk.name === name);
    if (next) args.cursor = walk.cursor;
    const r = await get("/api/related", args);
    if (!next) walk = { asked: name, name: r.name, nodes: [], edges: [] };
    walk.nodes.push(...r.nodes);
    walk.edges.push(...r.edges);
    walk.cursor = r.next_cursor || null;
    walk.truncated = Boolean(r.truncated);
    walk.also = r.also || walk.also || [];
    const degree = new Map();
    for (const e of walk.edges) for (const x of [e.from, e.to]) degree.set(x, (degree.get(x) || 0) + 1);
    return {
      center: walk.name, truncated: walk.truncated, more: Boolean(walk.cursor), also: walk.also,
      nodes: walk.nodes.map((n) => ({ id: n.name, label: n.name, kind: "entity", type: n.type, mentions: n.mentions, depth: n.depth, degree: degree.get(n.name) || 0 })),
      edges: walk.edges.map((e) => ({ source: e.from, target: e.to, together: e.together })),
    };
  }

  async function draw(path, more) {
    path = (path || "").trim();
    if (!path) return;
    limit.hidden = of.value === "entities";
    info.textContent = "loading…";
    let g;
    try { g = await fetchGraph(path, more); }
    catch (err) { failed(info, err); return; }
    pathIn.value = g.center;
    const elements = [
      ...g.nodes.map((n) => ({ group: "nodes", data: { ...n }, classes: n.id === g.center ? "center" : (n.depth === 1 && g.nodes.length < 400 ? "near" : "") })),
      ...g.edges.map((e, i) => ({ group: "edges", data: { id: `e${i}`, ...e } })),
    ];
    if (cy) cy.destroy();
    const n = g.nodes.length;
    const t0 = performance.now();
    const pos = rings(g);
    cy = cytoscape({
      container: box, elements, style, minZoom: 0.05, maxZoom: 1.6,
      layout: { name: "preset", positions: (node) => pos.get(node.id()), fit: true, padding: 30 },
      // a big graph pans and zooms as a picture, redrawn when the hand stops
      hideEdgesOnViewport: n > 300, textureOnViewport: n > 300, pixelRatio: n > 300 ? 1 : "auto",
    });
    box.dataset.drawMs = String(Math.round(performance.now() - t0));
    window.memorydGraph = cy; // for the browser test and the curious
    box.dataset.nodes = String(g.nodes.length);
    box.dataset.edges = String(g.edges.length);
    info.replaceChildren(
      `${g.nodes.length} nodes, ${g.edges.length} links around `,
      of.value === "entities" ? el("a", { href: "/entities" + query({ name: g.center }) }, g.center) : noteLink(g.center),
      g.truncated ? (of.value === "entities" ? " (the walk stopped at 500 entities: lower the depth)" : " (truncated: raise the limit or lower the depth)") : "",
      g.also && g.also.length ? el("span", { id: "graph-also" }, " · the name is also written for ", g.also.flatMap((a, i) => [i ? ", " : "", el("a", { href: "/graph" + query({ of: "entities", name: a.name, depth: depth.value }) }, a.name), ` (${a.type})`])) : "",
      g.more ? el("span", {}, " · ", el("button", { type: "button", id: "graph-more", onclick: () => draw(g.center, true) }, "more")) : "",
      " · click: centre on it · double-click: open it");
    cy.on("tap", "node", (evt) => {
      const n = evt.target;
      if ((n.data("kind") === "note" || n.data("kind") === "entity") && n.id() !== g.center) draw(n.id());
    });
    cy.on("dbltap", "node", (evt) => {
      const n = evt.target;
      if (n.data("kind") === "note") location.href = "/note" + query({ path: n.id() });
      if (n.data("kind") === "entity") location.href = "/entities" + query({ name: n.id() });
    });
    cy.on("mouseover", "node", (evt) => {
      const keep = evt.target.closedNeighborhood();
      cy.elements().not(keep).addClass("faded");
      keep.nodes().addClass("near");
    });
    cy.on("mouseout", "node", () => { cy.elements().removeClass("faded"); });
  }

  // the box's suggestions (notes' paths, or the most mentioned entities), then the first graph
  async function suggest() {
    const entities = of.value === "entities";
    pathIn.placeholder = entities ? "an entity's name" : "a note's path or name";
    limit.hidden = entities;
    try {
      const names = entities
        ? (await get("/api/entities", { top: 500 })).entities.map((x) => x.name)
        : (await get("/api/notes", { limit: 1000 })).items.map((n) => n.path);
      datalist.replaceChildren(...names.map((v) => el("option", { value: v })));
      if (!pathIn.value && names.length) pathIn.value = names[0];
    } catch (err) { /* the box still takes a typed name */ }
    if (pathIn.value) draw(pathIn.value);
    else info.textContent = entities ? "No entities found yet." : "No notes indexed yet.";
  }
  suggest();
})();
