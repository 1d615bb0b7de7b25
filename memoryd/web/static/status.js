// Status, polled every 2 s while the tab is visible: what needs attention (the words of
// `memoryctl status`'s first line), indexing and embedding progress with rate and ETA, store
// health, jobs, skipped files, migration backups, the last day's searches (count and p95), and
// every field of the answer under "All fields" (a field no card shows is never hidden).
"use strict";
(() => {
  const { el, get, when, duration, failed } = M;
  const main = document.getElementById("main");
  const POLL_MS = 2000;
  const parts = {
    attention: el("div", { id: "attention" }),
    progress: el("div", { class: "grid", id: "progress" }),
    chart: el("div", { id: "searches" }),
    health: el("div", { class: "grid", id: "health" }),
    jobs: el("div", { id: "jobs" }),
    skipped: el("div", { id: "skipped" }),
    backups: el("div", { id: "migration-backups" }),
    fields: el("dl", { class: "kv", id: "fields" }),
  };
  const stamp = el("span", { class: "small muted", id: "updated" });
  main.append(el("div", { class: "row" }, el("h1", {}, "Status"), el("span", { class: "grow" }), stamp),
    parts.attention, parts.progress, el("h2", {}, "Searches, last 24 hours"), parts.chart,
    el("h2", {}, "Store"), parts.health, el("h2", {}, "Jobs"), parts.jobs,
    el("h2", {}, "Skipped files"), parts.skipped, el("h2", {}, "Migration backups"), parts.backups,
    el("details", {}, el("summary", {}, "All fields"), parts.fields));

  // What a user must act on, in the words of memoryctl's status_summary (memoryd/ctl/output.py,
  // `attention`; tests/test_status_doors.py holds the two to one table of conditions).
  function attention(s) {
    const st = s.store || {}, w = s.watcher || {}, ix = s.index || {};
    const out = [];
    if (st.recovered) out.push(`database file removed under the daemon: stop it, move ${st.recovered} back, start it`);
    else if (st.moved_to) out.push(`database file moved under the daemon to ${st.moved_to}: move it back, restart it`);
    else if (st.ok === false && st.backend === "sqlite") out.push("database file replaced under the daemon: restart it");
    else if (st.ok === false) out.push("store unreachable");
    const refused = st.writes_refused;
    if (refused) {
      const last = refused.last_refused || "", worked = refused.last_worked || "";
      const when = worked && worked >= last ? ` at ${last.slice(11, 19)}, working since ${worked.slice(11, 19)}` : "";
      out.push(`writes refused${when}: ${refused.error}`);
    }
    if (st.checkpoint_blocked) out.push(`checkpoint blocked: ${st.checkpoint_blocked.error}`);
    const daily = s.daily_log || {};
    if (daily.waiting) out.push(`${daily.waiting} daily log line(s) waiting for the disk`);
    else if (daily.rewrites) out.push("daily log changes waiting for the disk");
    if (st.schema_newer) out.push("a newer memoryd upgraded the shared database: upgrade this one");
    if ((w.error || "").includes("workspace folder is missing")) out.push("workspace folder missing (index kept)");
    else if (w.alive === false) out.push("watcher stopped");
    const polled = w.polled;
    if (polled) out.push(`${polled.folders} folder(s) polled every ${polled.every_s} s, not watched (${polled.limit} reached): ${polled.raise}`);
    const model = s.model || {};
    if (model.state === "failed") out.push("embedding model failed");
    else if (model.state === "none" && !String(model.reason || "").startsWith("embedding.enabled is false")) out.push("no embedding model: keyword search only");
    if ((ix.skipped || []).length) out.push(`${ix.skipped.length} file(s) skipped`);
    if (s.code_replaced) out.push("memoryd was installed again since it started: restart it");
    const restart = (s.config || {}).restart_needed || [];
    if (restart.length) out.push(`restart to apply ${restart.join(", ")}`);
    const failed = (s.jobs || []).filter((j) => j && j.last_error).map((j) => String(j.name));
    if (failed.length) out.push(`job failed: ${failed.join(", ")}`);
    if (s.drift && s.drift.total && !s.drift.indexing) out.push(`drift ${s.drift.total}`);
    return out;
  }

  function needs(s) {
    const items = attention(s);
    parts.attention.replaceChildren(items.length
      ? el("div", { class: "card" }, el("b", { class: "bad" }, "Needs attention"),
        el("ul", {}, items.map((t) => el("li", { class: "bad" }, t))))
      : el("p", { class: "ok" }, "ok: nothing needs attention"));
  }

  // nested objects as dotted keys, as memoryctl status prints them (output.py, flatten)
  const flat = (obj, prefix = "") => Object.entries(obj).flatMap(([k, v]) =>
    v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length
      ? flat(v, `${prefix}${k}.`) : [[`${prefix}${k}`, v]]);
  const text = (v) => (v === null || v === undefined || v === "" ? "–"
    : Array.isArray(v) || typeof v === "object" ? (v.length === 0 ? "–" : JSON.stringify(v)) : String(v));

  function fields(s) {
    const { jobs, searches, stats, migration_backups, ...rest } = s;  // shown in their own parts
    parts.fields.replaceChildren(...flat(rest).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, text(v))]));
  }

  function backups(s) {
    const rows = s.migration_backups || [];
    parts.backups.replaceChildren(rows.length
      ? el("div", {}, el("p", { class: "small muted" }, "The store before an upgrade, the way back to the earlier memoryd (docs/service.md#upgrading); delete once not needed."),
        el("table", {}, el("tr", {}, ["file", "bytes", "made"].map((h) => el("th", {}, h))),
          rows.map((b) => el("tr", {}, el("td", {}, b.path), el("td", {}, fmt(b.bytes)), el("td", {}, when(b.created_at))))))
      : el("p", { class: "muted" }, "None."));
  }

  const kv = (pairs) => el("dl", { class: "kv" }, pairs.filter(Boolean).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  const bar = (done, total) => el("div", { class: "bar" }, el("div", { style: null, dataset: { pct: total ? Math.round((100 * done) / total) : 100 } }));
  const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString());
  const yes = (ok, good, bad) => el("span", { class: ok ? "ok" : "bad" }, ok ? good : bad);

  function progress(s) {
    const ix = s.index;
    const p = ix.progress;
    const indexing = el("div", { class: "card", id: "indexing" }, el("b", {}, "Indexing"),
      p ? bar(p.done, p.total) : null,
      kv([
        p ? ["files", `${fmt(p.done)} / ${fmt(p.total)}`] : ["state", ix.initial_reconcile_done ? "up to date" : "starting"],
        p ? ["rate", `${p.rate_per_s ?? "–"} files/s`] : null,
        p ? ["ETA", duration(p.eta_s)] : null,
        ["indexed", fmt(ix.files_indexed)], ["unchanged", fmt(ix.files_unchanged)],
        ["skipped", fmt(ix.files_skipped)],
        ["last reconcile", ix.last_reconcile ? when(ix.last_reconcile.at) : "–"],
        ["watcher", s.watcher.alive === null && !s.watcher.error ? "starting" // (null: not started yet, as memoryctl reads it)
          : yes(s.watcher.alive, "watching", s.watcher.error || "not running")],
      ]));
    const v = s.vectors;
    const total = (v.done || 0) + (v.pending || 0);
    const embedding = el("div", { class: "card", id: "embedding" }, el("b", {}, "Embedding"),
      bar(v.done || 0, total),
      kv([
        ["vectors", `${fmt(v.done)} / ${fmt(total)}`], ["pending", fmt(v.pending)],
        ["rate", v.rate_per_s ? `${v.rate_per_s} texts/s` : "–"], ["ETA", (ix.initial_reconcile_done === false && v.eta_s != null ? "> " : "") + duration(v.eta_s)],
        ["now", v.current || (v.embedding ? "embedding" : "idle")],
        ["model", s.model.description || [s.model.state, s.model.model].filter(Boolean).join(" · ") || JSON.stringify(s.model)],
        s.model.reason ? ["why", s.model.reason] : null,
        v.last_error ? ["last error", el("span", { class: "bad" }, v.last_error)] : null,
      ]));
    parts.progress.replaceChildren(indexing, embedding);
    for (const b of parts.progress.querySelectorAll(".bar > div")) b.style.width = `${b.dataset.pct}%`;
  }

  function health(s) {
    const st = s.store;
    const c = s.counts || {};
    parts.health.replaceChildren(
      el("div", { class: "card" }, el("b", {}, "Health"), kv([
        ["backend", st.backend], ["answers", yes(st.ok, "yes", st.error || "no")],
        ["database", `${(s.db_bytes / 1048576).toFixed(1)} MiB`], ["path", s.db_path],
        ["daemon", `pid ${s.pid}, up ${duration(s.uptime_s)}, v${s.version}`],
        ["code", yes(!s.code_replaced, "as started", "installed again since it started: restart it")],
        st.schema_newer ? ["schema", el("span", { class: "bad" }, "a newer memoryd upgraded the shared database: upgrade this one")] : null,
        ["configuration", yes(!((s.config || {}).restart_needed || []).length, (s.config || {}).file || "defaults, no file",
          `restart to apply ${((s.config || {}).restart_needed || []).join(", ")}`)],
      ])),
      el("div", { class: "card" }, el("b", {}, "Contents"), kv(Object.entries(c).map(([k, v]) => [k, fmt(v)]))),
    );
  }

  function jobs(s) {
    parts.jobs.replaceChildren(el("table", {},
      el("tr", {}, ["job", "runs", "failures", "last run", "took", "result", "next"].map((h) => el("th", {}, h))),
      s.jobs.map((j) => el("tr", {},
        el("td", {}, j.name, j.running ? " (running)" : ""), el("td", {}, fmt(j.runs)),
        el("td", { class: j.failures ? "bad" : "" }, fmt(j.failures)), el("td", {}, when(j.last_run_at)),
        el("td", {}, j.last_duration_ms === null ? "–" : `${j.last_duration_ms} ms`),
        el("td", { class: j.last_error ? "bad" : "small" }, j.last_error || (j.last_result ? JSON.stringify(j.last_result) : "")),
        el("td", {}, when(j.next_run_at)))),
    ), el("h3", { class: "small muted" }, "Recent runs"), history(s.jobs));
  }

  function history(list) {
    const runs = list.flatMap((j) => (j.recent_runs || []).map((r) => ({ job: j.name, ...r })))
      .sort((a, b) => Date.parse(b.at) - Date.parse(a.at)).slice(0, 15);
    if (!runs.length) return el("p", { class: "muted small" }, "No job has run yet.");
    return el("table", { id: "job-history" },
      el("tr", {}, ["when", "job", "took", "outcome"].map((h) => el("th", {}, h))),
      runs.map((r) => el("tr", {}, el("td", {}, when(r.at)), el("td", {}, r.job),
        el("td", {}, `${r.duration_ms} ms`),
        el("td", { class: r.error ? "bad" : "ok" }, r.error || "ok"))));
  }

  function skipped(s) {
    const rows = s.index.skipped || [];
    parts.skipped.replaceChildren(rows.length
      ? el("table", {}, el("tr", {}, el("th", {}, "file"), el("th", {}, "why")), rows.map((r) => el("tr", {}, el("td", {}, r.path), el("td", {}, r.reason))))
      : el("p", { class: "muted" }, "None."));
  }

  function chart(searches) {
    const buckets = searches.buckets || [];
    const canvas = el("canvas", { class: "chart", id: "search-chart", width: 1000, height: 140 });
    const total = buckets.reduce((a, b) => a + b.count, 0);
    const p95s = buckets.map((b) => b.p95_ms).sort((a, b) => a - b);
    parts.chart.replaceChildren(
      el("div", { class: "small muted" }, `${fmt(total)} searches · bars: searches per 10 minutes · line: p95 latency (worst bucket ${p95s.length ? p95s[p95s.length - 1] : 0} ms)`),
      canvas);
    const ctx = canvas.getContext("2d");
    const W = canvas.width, H = canvas.height, pad = 18;
    const slots = 144;
    const now = Date.now();
    const maxCount = Math.max(1, ...buckets.map((b) => b.count));
    const maxMs = Math.max(1, ...buckets.map((b) => b.p95_ms));
    const dark = matchMedia("(prefers-color-scheme: dark)").matches;
    ctx.clearRect(0, 0, W, H);
    ctx.strokeStyle = dark ? "#444" : "#ddd";
    ctx.beginPath(); ctx.moveTo(0, H - pad); ctx.lineTo(W, H - pad); ctx.stroke();
    const x = (iso) => { const age = (now - Date.parse(iso)) / 600000; return W - ((age + 1) * W) / slots; };
    ctx.fillStyle = dark ? "#5b7bd6" : "#9db4ee";
    for (const b of buckets) {
      const h = ((H - 2 * pad) * b.count) / maxCount;
      ctx.fillRect(x(b.at), H - pad - h, W / slots - 1, h);
    }
    ctx.strokeStyle = "#d9534f"; ctx.lineWidth = 2; ctx.beginPath();
    buckets.forEach((b, i) => {
      const y = H - pad - ((H - 2 * pad) * b.p95_ms) / maxMs;
      const px = x(b.at) + W / slots / 2;
      if (i) ctx.lineTo(px, y); else ctx.moveTo(px, y);
    });
    ctx.stroke();
    ctx.fillStyle = dark ? "#aaa" : "#777"; ctx.font = "11px system-ui";
    ctx.fillText("24 h ago", 2, H - 4); ctx.fillText("now", W - 24, H - 4);
    ctx.fillText(`${maxCount} / 10 min`, 2, 11); ctx.fillText(`${maxMs} ms`, W - 60, 11);
  }

  let timer = null;
  async function poll() {
    clearTimeout(timer);
    try {
      const s = await get("/api/status");
      needs(s); progress(s); chart(s.searches); health(s); jobs(s); skipped(s); backups(s); fields(s);
      stamp.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (err) { failed(parts.progress, err); }
    if (!document.hidden) timer = setTimeout(poll, POLL_MS);
  }
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  poll();
})();
