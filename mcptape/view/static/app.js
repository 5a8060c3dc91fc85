// mcptape ui: the viewer's one script. No framework, no build step, no network but this server.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const main = $("#main");
const state = { live: null, route: null, session: null };

// -- helpers ------------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    // Through the CSSOM: the page's Content-Security-Policy refuses inline style attributes.
    else if (key === "style") node.style.cssText = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// replaceChildren() with arrays flattened and empty children left out (it would write "null").
function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) {
    throw new Error("Not logged in: open the URL `mcptape ui` printed (it holds the token).");
  }
  const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

function showError(where, error) {
  fill(where, el("div", { class: "error", "data-testid": "error" }, String(error.message || error)));
}

function ms(value) {
  if (value === null || value === undefined) return "";
  if (value < 10) return `${value.toFixed(2)} ms`;
  if (value < 1000) return `${value.toFixed(1)} ms`;
  if (value < 60000) return `${(value / 1000).toFixed(2)} s`;
  const minutes = Math.floor(value / 60000);
  return `${minutes}m${String(Math.floor((value % 60000) / 1000)).padStart(2, "0")}s`;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

function when(ts) {
  if (!ts) return "";
  const d = new Date(ts * 1000);
  return d.toLocaleString(undefined, { month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function short(id) { return id ? id.slice(0, 12) : ""; }

function badge(text, kind) {
  return el("span", { class: `badge ${kind || String(text).split(" ")[0]}` }, text);
}

function debounce(fn, wait) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), wait); };
}

function closeLive() {
  if (state.live) { state.live.close(); state.live = null; }
  $("#live").classList.remove("on");
}

function openLive(query, handlers) {
  closeLive();
  const source = new EventSource(`/api/live?${new URLSearchParams(query)}`);
  source.addEventListener("hello", () => $("#live").classList.add("on"));
  source.onerror = () => $("#live").classList.remove("on");
  for (const [name, handler] of Object.entries(handlers)) {
    source.addEventListener(name, (event) => handler(JSON.parse(event.data)));
  }
  source.addEventListener("reload", () => { closeLive(); route(); });
  source.addEventListener("trouble", (event) => {
    const live = $("#live");
    live.classList.remove("on");
    live.title = `live updates paused: ${JSON.parse(event.data).error}`;
  });
  state.live = source;
}

// -- login and routing --------------------------------------------------------------------

async function login() {
  const match = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (!match) return;
  // The token leaves the address bar (and the history) before anything else happens.
  history.replaceState(null, "", location.pathname + "#/");
  await fetch("/api/login", { method: "POST", credentials: "same-origin", headers: { "X-Mcptape-Token": decodeURIComponent(match[1]) } });
}

function parseHash() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query || "") };
}

async function route() {
  const { parts, query } = parseHash();
  for (const link of document.querySelectorAll("[data-nav]")) link.classList.remove("on");
  const page = parts[0] || "sessions";
  const nav = $(`[data-nav="${page === "s" ? "sessions" : page}"]`);
  if (nav) nav.classList.add("on");
  if (page === "s" && parts[1]) {
    const seq = parts[2] === "f" ? Number(parts[3]) : null;
    if (state.session && state.session.ref === parts[1]) { state.session.select(seq); return; }
    return sessionPage(parts[1], seq);
  }
  state.session = null;
  closeLive();
  if (page === "compare") return comparePage(query);
  if (page === "sql") return sqlPage();
  return sessionsPage();
}

// -- sessions ---------------------------------------------------------------------------

function sessionsPage() {
  const search = el("input", { type: "search", placeholder: "search name, id, client, server, upstream…", size: 40, "data-testid": "search" });
  const mode = el("select", { "data-testid": "mode" }, ["", "record", "proxy", "call", "client", "replay", "serve"].map((m) => el("option", { value: m }, m || "any mode")));
  const status = el("select", { "data-testid": "status" }, ["", "running", "closed", "ok", "error", "interrupted", "lost"].map((s) => el("option", { value: s }, s || "any status")));
  const table = el("div", { class: "panel" }, el("p", { class: "muted" }, "Loading…"));
  fill(main, el("h1", {}, "Sessions"), el("div", { class: "toolbar" }, search, mode, status), table);

  const load = async () => {
    try {
      const params = new URLSearchParams({ q: search.value, mode: mode.value, status: status.value });
      const body = await api(`/api/sessions?${params}`);
      $("#db").textContent = body.db;
      fill(table, sessionsTable(body.sessions));
    } catch (error) { showError(table, error); }
  };
  const later = debounce(load, 250);
  search.addEventListener("input", later);
  mode.addEventListener("change", load);
  status.addEventListener("change", load);
  load();
  openLive({}, { sessions: debounce(load, 500) });
}

function sessionsTable(rows) {
  if (!rows.length) return el("p", { class: "muted", "data-testid": "no-sessions" }, "No sessions match.");
  const head = ["status", "name", "id", "mode", "client", "server", "revision", "started", "duration", "frames", "errors", "upstream"];
  return el("table", { class: "grid", "data-testid": "sessions" },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { class: ["frames", "errors", "duration"].includes(h) ? "num" : "" }, h)))),
    el("tbody", {}, rows.map((row) => {
      const duration = row.ended_at ? (row.ended_at - row.started_at) * 1000 : null;
      const open = () => { location.hash = `#/s/${row.id}`; };
      return el("tr", { class: "click", onclick: open, "data-session": row.id },
        el("td", {}, badge(row.label, row.label === "running" ? "running" : undefined)),
        el("td", {}, row.name || ""),
        el("td", { class: "mono" }, short(row.id)),
        el("td", {}, row.mode, row.replay_of ? [" ", el("a", { href: `#/compare?right=${row.id}`, onclick: (e) => e.stopPropagation() }, "compare")] : null),
        el("td", {}, [row.client_name, row.client_version].filter(Boolean).join(" ")),
        el("td", {}, [row.server_name, row.server_version].filter(Boolean).join(" ")),
        el("td", { class: "mono" }, row.protocol_version || ""),
        el("td", {}, when(row.started_at)),
        el("td", { class: "num" }, ms(duration)),
        el("td", { class: "num" }, row.frames),
        el("td", { class: "num" }, row.errors ? badge(String(row.errors), "bad") : "0"),
        el("td", { class: "mono", title: row.upstream || "" }, (row.upstream || "").slice(0, 60)));
    })));
}

// -- a session: the data ---------------------------------------------------------------------

// Frames are held as parallel arrays, as the server sends them; a few more are derived.
class Frames {
  constructor(cols) {
    this.methods = [""]; this.methodIndex = new Map([["", 0]]); this.kinds = cols.kinds; this.origins = cols.origins;
    this.seq = []; this.t = []; this.dir = []; this.kind = []; this.method = []; this.id = [];
    this.size = []; this.req = []; this.origin = [];
    // A conversation's frames: seq is the frame's place in the conversation; sess (an index
    // into its sessions) and sseq (the seq there) say where it was recorded.
    this.sess = []; this.sseq = []; this.places = null;
    // seq -> position, and request seq -> position of its reply: typed arrays, -1 for none
    // (a Map of 100,000 entries took longer to build than everything else on the page).
    this.posOf = new Int32Array(1024).fill(-1); this.replyPos = new Int32Array(1024).fill(-1);
    this.append(cols);
  }
  get length() { return this.seq.length; }
  intern(name) {
    let index = this.methodIndex.get(name);
    if (index === undefined) { index = this.methods.length; this.methods.push(name); this.methodIndex.set(name, index); }
    return index;
  }
  room(seq) {
    if (seq < this.posOf.length) return;
    let size = this.posOf.length;
    while (size <= seq) size *= 2;
    const grow = (old) => { const next = new Int32Array(size).fill(-1); next.set(old); return next; };
    this.posOf = grow(this.posOf); this.replyPos = grow(this.replyPos);
  }
  append(cols) {
    // Methods come as indexes into cols.methods, or (methods null) as the names themselves.
    const map = cols.methods ? cols.methods.map((name) => this.intern(name)) : null;
    const kindMap = cols.kinds.map((name) => this.kinds.indexOf(name));
    const originMap = cols.origins.map((name) => this.origins.indexOf(name));
    const n = cols.seq.length;
    if (n) this.room(Math.max(cols.seq[n - 1], ...cols.req.slice(-1)));
    let added = 0;
    const last = this.length ? this.seq[this.length - 1] : 0;
    for (let i = 0; i < n; i++) {
      const seq = cols.seq[i];
      if (seq <= last) continue; // seen already (the catch-up and the live poll overlap)
      if (seq >= this.posOf.length || cols.req[i] >= this.posOf.length) this.room(Math.max(seq, cols.req[i]));
      const at = this.seq.length;
      this.seq.push(seq); this.t.push(cols.t[i]); this.dir.push(cols.dir[i]);
      this.kind.push(kindMap[cols.kind[i]]); this.method.push(map ? map[cols.method[i]] : this.intern(cols.method[i]));
      this.id.push(cols.id[i]); this.size.push(cols.size[i]); this.req.push(cols.req[i]);
      this.origin.push(originMap[cols.origin[i]]);
      if (cols.sess) { this.sess.push(cols.sess[i]); this.sseq.push(cols.sseq[i]); }
      this.posOf[seq] = at;
      if (cols.req[i]) this.replyPos[cols.req[i]] = at;
      added++;
    }
    return added;
  }
  sessionOf(i) { return this.sess.length ? this.sess[i] : 0; }
  recordedSeq(i) { return this.sseq.length ? this.sseq[i] : this.seq[i]; }
  // The place in the conversation of seq `sseq` of session `sess` (a frame's pair is named so).
  placeOf(sess, sseq) {
    if (!this.sess.length) return sseq;
    if (!this.places) { this.places = new Map(); for (let i = 0; i < this.length; i++) this.places.set(`${this.sess[i]}:${this.sseq[i]}`, this.seq[i]); }
    return this.places.get(`${sess}:${sseq}`);
  }
  indexOfSeq(seq) { return seq >= 0 && seq < this.posOf.length && this.posOf[seq] >= 0 ? this.posOf[seq] : undefined; }
  replyOf(seq) { return seq < this.replyPos.length && this.replyPos[seq] >= 0 ? this.replyPos[seq] : undefined; }
  kindName(i) { return this.kinds[this.kind[i]]; }
  methodName(i) { return this.methods[this.method[i]] || ""; }
  latency(i) {
    if (!this.req[i]) return null;
    const request = this.indexOfSeq(this.req[i]);
    return request === undefined ? null : this.t[i] - this.t[request];
  }
}

// -- a session: the timeline ---------------------------------------------------------------

const LANES = ["operations", "client → server", "server → client", "server requests", "notifications", "stderr · events"];
const LANE_H = 30, TOP = 8, LEFT = 118, AXIS = 22;

// A conversation's timeline has a lane per session (its exchanges, and the frames that
// are not requests), then its notifications and events.
function conversationLanes(sessions) {
  return ["operations", ...sessions.map((s) => `${s.replica ? s.replica + " · " : ""}${s.id.slice(0, 6)}`), "notifications", "stderr · events"];
}

class Timeline {
  constructor(canvas, page) {
    this.canvas = canvas; this.page = page; this.view = null; this.brush = null; this.drag = null; this.fit = true;
    canvas.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    canvas.addEventListener("mousedown", (e) => this.down(e));
    window.addEventListener("mousemove", (e) => this.move(e));
    window.addEventListener("mouseup", (e) => this.up(e));
    canvas.addEventListener("dblclick", () => this.reset());
    new ResizeObserver(() => this.draw()).observe(canvas);
  }
  get lanes() { return this.page.many ? conversationLanes(this.page.sessions) : LANES; }
  extent() {
    const f = this.page.frames;
    // The session's end is known before its last frames are read: the axis is whole at once.
    let end = Math.max(f.length ? f.t[f.length - 1] : 1, this.page.end || 0);
    for (const e of this.page.events) end = Math.max(end, e.t);
    return [Math.min(0, f.length ? f.t[0] : 0), Math.max(end * 1.02, 1)];
  }
  reset() { this.fit = true; this.view = this.extent(); this.draw(); }
  zoom(factor, at = 0.5) {
    if (!this.view) this.view = this.extent();
    const [a, b] = this.view; const span = b - a; const center = a + span * at;
    const next = Math.max(span * factor, 0.05);
    this.view = [center - next * at, center + next * (1 - at)]; this.fit = false; this.draw();
  }
  x(t, width) { const [a, b] = this.view; return LEFT + ((t - a) / (b - a)) * (width - LEFT - 8); }
  time(x, width) { const [a, b] = this.view; return a + ((x - LEFT) / (width - LEFT - 8)) * (b - a); }
  wheel(event) {
    event.preventDefault();
    const rect = this.canvas.getBoundingClientRect();
    const at = Math.min(1, Math.max(0, (event.clientX - rect.left - LEFT) / (rect.width - LEFT - 8)));
    this.zoom(event.deltaY > 0 ? 1.25 : 0.8, at);
  }
  down(event) {
    const rect = this.canvas.getBoundingClientRect();
    if (event.clientX - rect.left < LEFT) return;
    this.drag = { x0: event.clientX - rect.left, x1: event.clientX - rect.left, width: rect.width };
  }
  move(event) {
    if (!this.drag) return;
    const rect = this.canvas.getBoundingClientRect();
    this.drag.x1 = Math.max(LEFT, Math.min(rect.width, event.clientX - rect.left)); this.draw();
  }
  up() {
    if (!this.drag) return;
    const { x0, x1, width } = this.drag; this.drag = null;
    if (Math.abs(x1 - x0) < 4) { this.draw(); return; }
    const a = this.time(Math.min(x0, x1), width), b = this.time(Math.max(x0, x1), width);
    this.page.setBrush([a, b]);
  }
  draw() {
    const canvas = this.canvas; const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (!width) return;
    if (canvas.width !== Math.round(width * ratio)) { canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio); }
    if (!this.view || this.fit) this.view = this.extent();
    const g = canvas.getContext("2d"); g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height); g.font = "11px system-ui, sans-serif";
    const [a, b] = this.view; const f = this.page.frames;
    const lanes = this.lanes, many = this.page.many, notes = lanes.length - 2, eventsLane = lanes.length - 1;
    lanes.forEach((name, lane) => {
      const y = TOP + lane * LANE_H;
      g.fillStyle = lane % 2 ? "#fafbfd" : "#f3f5f9"; g.fillRect(0, y, width, LANE_H);
      g.fillStyle = "#5b6478"; g.fillText(name.length > 18 ? name.slice(0, 17) + "…" : name, 6, y + 18);
    });
    const laneY = (lane) => TOP + lane * LANE_H;
    const visible = (t0, t1) => t1 >= a && t0 <= b;
    const clampX = (t) => Math.max(LEFT, Math.min(width - 8, this.x(t, width)));
    const end = f.length ? f.t[f.length - 1] : 0;
    // Spans: client requests (lane 1) and server requests (lane 3), request to answer. What
    // would land on a pixel already drawn in the same colour is skipped: zoomed out on
    // 100,000 frames, that is most of them.
    const lastPx = new Map();
    const seen = (slot, px, color) => {
      const key = `${slot}:${color}`;
      if (lastPx.get(key) === px) return true;
      lastPx.set(key, px);
      return false;
    };
    for (let i = 0; i < f.length; i++) {
      const name = f.kinds[f.kind[i]];
      const t = f.t[i];
      if (name === "request") {
        const reply = f.replyOf(f.seq[i]);
        const t1 = reply === undefined ? end : f.t[reply];
        if (!visible(t, t1)) continue;
        const lane = many ? 1 + f.sess[i] : f.dir[i] === 0 ? 1 : 3;
        const x0 = clampX(t), x1 = Math.max(clampX(t1), x0 + 1.5);
        let color = "#4a86e8";
        if (reply === undefined) color = "#b0b6c2";
        else if (f.kinds[f.kind[reply]] === "error") color = "#d33a3a";
        else if (f.dir[i] === 1) color = f.origins[f.origin[reply]] === "proxy" ? "#8a4fd6" : "#239a5b";
        // In a conversation's lane, server requests take the lowest row, client requests the two above.
        const row = many ? (f.dir[i] === 1 ? 12 : (f.seq[i] % 2) * 6) : (f.seq[i] % 3) * 6;
        if (x1 - x0 <= 2 && seen(lane * 32 + row, x0 | 0, color)) continue;
        g.fillStyle = color;
        g.fillRect(x0, laneY(lane) + 5 + row, x1 - x0, 5);
      } else if (t >= a && t <= b) {
        const x = this.x(t, width);
        let lane, color, top = 6, h = 18;
        if (name === "notification") { lane = notes; color = f.dir[i] === 0 ? "#9fb8e6" : "#d98a1c"; }
        else if (many) { lane = 1 + f.sess[i]; color = name === "error" || name === "malformed" ? "#d33a3a" : "#6c7a96"; top = 22; h = 6; }
        else if (f.dir[i] === 1) { lane = 2; color = name === "error" || name === "malformed" ? "#d33a3a" : "#6c7a96"; }
        else { lane = 1; color = "#6c7a96"; top = 22; h = 6; }
        if (seen(lane * 32 + 31, x | 0, color)) continue;
        g.fillStyle = color;
        g.fillRect(x, laneY(lane) + top, 1.5, h);
      }
    }
    for (const e of this.page.events) {
      if (e.t < a || e.t > b) continue;
      g.fillStyle = e.kind === "stderr" ? "#8b93a3" : e.kind === "error" ? "#d33a3a" : "#d98a1c";
      g.fillRect(this.x(e.t, width), laneY(eventsLane) + 6, 1.5, 18);
    }
    for (const group of this.page.groups) {
      if (!visible(group.start, group.end)) continue;
      const x0 = clampX(group.start), x1 = Math.max(clampX(group.end), x0 + 3);
      g.fillStyle = group.kind === "task" ? "#d98a1c" : "#8a4fd6";
      g.fillRect(x0, laneY(0) + 8, x1 - x0, 8);
      g.fillStyle = "#2b2f3a";
      const label = `${group.label} · ${group.steps} ${group.kind === "task" ? "polls" : "rounds"} · ${ms(group.duration_ms)}`;
      if (x1 - x0 > 40) g.fillText(label, x0 + 2, laneY(0) + 27);
    }
    // The axis.
    const axisY = TOP + lanes.length * LANE_H;
    g.fillStyle = "#5b6478"; g.strokeStyle = "#d5dae3";
    const step = niceStep((b - a) / 8);
    for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
      const x = this.x(t, width);
      g.beginPath(); g.moveTo(x, TOP); g.lineTo(x, axisY); g.stroke();
      g.fillText(ms(t).replace(" ", ""), x + 2, axisY + 14);
    }
    const brush = this.drag ? [this.time(Math.min(this.drag.x0, this.drag.x1), width), this.time(Math.max(this.drag.x0, this.drag.x1), width)] : this.page.brush;
    if (brush) {
      const x0 = clampX(brush[0]), x1 = clampX(brush[1]);
      g.fillStyle = "rgba(47, 111, 222, 0.12)"; g.fillRect(x0, TOP, x1 - x0, axisY - TOP);
      g.strokeStyle = "rgba(47, 111, 222, 0.7)"; g.strokeRect(x0, TOP, x1 - x0, axisY - TOP);
    }
  }
}

function niceStep(raw) {
  const power = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-6))));
  for (const m of [1, 2, 5, 10]) if (raw <= m * power) return m * power;
  return 10 * power;
}

// -- a session: the virtualised list of frames ------------------------------------------------

const ROW_H = 22;

class FrameList {
  constructor(box, page) {
    this.box = box; this.page = page; this.rows = []; this.selected = null;
    this.body = el("div", { class: "vbody" }); box.append(this.body);
    box.addEventListener("scroll", () => this.render());
    new ResizeObserver(() => this.render()).observe(box);
  }
  setRows(rows, keepScroll = true) {
    const atEnd = this.box.scrollTop + this.box.clientHeight >= this.body.offsetHeight - ROW_H;
    this.rows = rows; this.body.style.height = `${rows.length * ROW_H}px`;
    if (!keepScroll) this.box.scrollTop = 0;
    else if (atEnd && this.page.following) this.box.scrollTop = rows.length * ROW_H;
    this.render();
  }
  scrollTo(index) {
    const top = index * ROW_H;
    if (top < this.box.scrollTop || top > this.box.scrollTop + this.box.clientHeight - ROW_H) this.box.scrollTop = Math.max(0, top - 3 * ROW_H);
    this.render();
  }
  render() {
    const f = this.page.frames;
    const first = Math.max(0, Math.floor(this.box.scrollTop / ROW_H) - 8);
    const last = Math.min(this.rows.length, Math.ceil((this.box.scrollTop + this.box.clientHeight) / ROW_H) + 8);
    const nodes = [];
    for (let r = first; r < last; r++) {
      const i = this.rows[r];
      const kind = f.kindName(i);
      const latency = f.latency(i);
      const row = el("div", { class: `vrow${f.seq[i] === this.selected ? " sel" : ""}`, "data-seq": f.seq[i], style: `top:${r * ROW_H}px` },
        this.page.many ? el("span", { class: "c tag", style: "width:58px", title: this.page.sessions[f.sess[i]].id }, this.page.sessions[f.sess[i]].id.slice(0, 6)) : null,
        el("span", { class: "c", style: "width:64px" }, `#${f.recordedSeq(i)}`),
        el("span", { class: "c", style: "width:86px" }, `+${(f.t[i] / 1000).toFixed(3)}s`),
        el("span", { class: "dir" }, f.dir[i] === 0 ? "→" : "←"),
        el("span", { class: `c k-${kind}`, style: "width:96px" }, kind),
        el("span", { class: "c", style: "width:230px" }, f.methodName(i)),
        el("span", { class: "c", style: "width:80px" }, f.id[i] === null ? "" : f.id[i]),
        el("span", { class: "c", style: "width:80px;text-align:right" }, bytes(f.size[i])),
        el("span", { class: "c", style: "width:90px;text-align:right" }, latency === null ? "" : ms(latency)),
        f.origins[f.origin[i]] === "proxy" ? el("span", { class: "badge warn" }, "proxy") : null);
      nodes.push(row);
    }
    fill(this.body, ...nodes);
  }
}

// -- a session: the page -------------------------------------------------------------------

// A session's page paints from its first frames; the rest come in chunks of this many.
const CHUNK = 25000;

class SessionPage {
  constructor(ref, data) {
    this.ref = ref; this.data = data; this.frames = new Frames(data.frames); this.events = data.events;
    this.groups = []; this.stats = { latency: [], tools: [], conversations: [] }; this.brush = null; this.filter = ""; this.following = true;
    this.lastId = data.last_id; this.lastEventId = data.last_event_id; this.selectedSeq = null;
    // A conversation: its frames come from several sessions (see Frames), whole and not live.
    this.many = Boolean(data.conversation); this.sessions = data.sessions; this.end = data.end;
    this.next = data.next; this.reading = data.next !== null && data.next !== undefined;
  }
  mount() {
    const s = this.data.session;
    this.header = el("div");
    this.renderHeader();
    const canvas = el("canvas", { class: "timeline", "data-testid": "timeline" });
    const zoomIn = el("button", { onclick: () => this.timeline.zoom(0.5), title: "zoom in (wheel)" }, "+");
    const zoomOut = el("button", { onclick: () => this.timeline.zoom(2), title: "zoom out (wheel)" }, "−");
    if (this.many) canvas.style.height = `${TOP + conversationLanes(this.sessions).length * LANE_H + AXIS}px`;
    const fit = el("button", { onclick: () => this.timeline.reset(), title: "whole session (double-click)" }, "fit");
    const toBrush = el("button", { onclick: () => { if (this.brush) { this.timeline.view = [...this.brush]; this.timeline.fit = false; this.timeline.draw(); } } }, "zoom to selection");
    this.brushNote = el("span", { class: "muted", "data-testid": "brush" });
    const search = el("input", { type: "search", placeholder: "filter frames: method, id, kind", size: 30, "data-testid": "frame-filter" });
    search.addEventListener("input", debounce(() => { this.filter = search.value.toLowerCase(); this.refilter(false); }, 150));
    this.count = el("span", { class: "muted", "data-testid": "frame-count" });
    const listBox = el("div", { class: "vlist", "data-testid": "frames" });
    this.detailBox = el("div", { class: "panel detail", "data-testid": "detail" }, el("p", { class: "muted" }, "Click a frame to see it whole."));
    this.statsBox = el("div", {}, el("p", { class: "muted" }, "Reading latency, tool results and grouped operations…"));
    fill(main, 
      this.header,
      el("div", { class: "toolbar" }, zoomIn, zoomOut, fit, toBrush, this.brushNote,
        el("span", { class: "tl-help" }, "wheel: zoom · drag: select a time range · double-click: whole session")),
      el("div", { class: "timeline-wrap" }, canvas),
      el("div", { class: "layout-session" },
        el("div", {}, el("div", { class: "toolbar", style: "margin-top:10px" }, search, this.count), listBox),
        el("div", { style: "margin-top:10px" }, this.detailBox)),
      this.statsBox);
    this.timeline = new Timeline(canvas, this);
    this.list = new FrameList(listBox, this);
    listBox.addEventListener("click", (event) => {
      const row = event.target.closest(".vrow");
      if (row) location.hash = `#/s/${encodeURIComponent(this.ref)}/f/${row.dataset.seq}`;
    });
    this.refilter(false);
    this.timeline.draw();
    // Once the page has been painted: the rest of the frames, then what the server computes.
    requestAnimationFrame(() => setTimeout(() => this.loadRest()));
    document.title = `mcptape · ${this.many ? this.data.conversation.slice(0, 20) : s.name || short(s.id)}`;
  }
  async loadRest() {
    try {
      // The next chunk is asked for as soon as a chunk says where it goes on: the server reads
      // it while this one is added and drawn.
      const chunk = (after) => api(`/api/sessions/${encodeURIComponent(this.data.session.id)}/frames?after=${after}&limit=${CHUNK}`);
      let pending = this.reading ? chunk(this.next) : null;
      while (pending) {
        const body = await pending;
        if (state.session !== this) return;
        this.next = body.next;
        pending = body.next !== null && body.next !== undefined ? chunk(body.next) : null;
        this.frames.append(body.frames);
        this.scheduleRedraw();
        await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
      }
    } catch (error) { showError(this.statsBox, error); }
    this.reading = false;
    this.scheduleRedraw();
    requestAnimationFrame(() => setTimeout(() => { window.__mcptapeLoaded = performance.now(); }));
    this.loadStats();
    if (!this.many && this.data.session.status === "running") this.goLive();
  }
  renderHeader() {
    if (this.many) { this.renderConversationHeader(); return; }
    const s = this.data.session;
    const label = s.label;
    fill(this.header, 
      el("h1", {}, s.name || "session", " ", el("span", { class: "mono muted" }, short(s.id)), " ", badge(label, label === "running" ? "running" : undefined)),
      el("div", { class: "cards", "data-testid": "session-facts" },
        el("span", {}, el("b", {}, "mode "), s.mode, s.transport ? ` (${s.transport})` : ""),
        el("span", {}, el("b", {}, "client "), [s.client_name, s.client_version].filter(Boolean).join(" ") || "?"),
        el("span", {}, el("b", {}, "server "), [s.server_name, s.server_version].filter(Boolean).join(" ") || "?"),
        el("span", {}, el("b", {}, "revision "), s.protocol_version || "?"),
        el("span", {}, el("b", {}, "frames "), String(Math.max(this.frames.length, this.data.last_seq || 0))),
        el("span", {}, el("b", {}, "started "), when(s.started_at)),
        s.replica ? el("span", {}, el("b", {}, "replica "), s.replica) : null,
        s.conversation_id ? el("a", { href: `#/s/${encodeURIComponent(s.conversation_id)}`, "data-testid": "conversation-link" }, "whole conversation") : null,
        s.replay_of ? el("a", { href: `#/compare?left=${s.replay_of}&right=${s.id}`, "data-testid": "compare-original" }, "compare with the original") : null,
        el("a", { href: `#/compare?left=${s.id}` }, "compare with…")),
      s.upstream ? el("div", { class: "mono muted" }, s.upstream) : null,
      s.error ? el("div", { class: "error" }, s.error) : null);
  }
  // How a frame is named to a person: #seq, and in a conversation the session's tag before it.
  frameName(seq) {
    const i = this.frames.indexOfSeq(seq);
    if (!this.many || i === undefined) return `#${seq}`;
    return `${this.sessions[this.frames.sess[i]].id.slice(0, 6)}#${this.frames.sseq[i]}`;
  }
  renderConversationHeader() {
    const d = this.data;
    fill(this.header,
      el("h1", {}, "conversation ", el("span", { class: "mono muted" }, d.conversation)),
      el("div", { class: "cards", "data-testid": "conversation-facts" },
        el("span", {}, el("b", {}, "sessions "), String(this.sessions.length)),
        el("span", {}, el("b", {}, "frames "), String(this.frames.length)),
        d.stitched ? el("span", { class: "muted" }, "stitched from 2026-07-28 traffic: its exchanges, and the events of their sessions while they ran") : null,
        // A conversation is read once: its sessions' own pages are the live ones.
        this.sessions.some((s) => s.status === "running") ? el("span", { class: "muted", "data-testid": "not-live" }, "a session is still recording: reload for its new frames") : null),
      el("table", { class: "grid", "data-testid": "conversation-sessions" },
        el("thead", {}, el("tr", {}, ["lane", "session", "replica", "mode", "revision", "status", "started"].map((h) => el("th", {}, h)))),
        el("tbody", {}, this.sessions.map((s) => el("tr", {},
          el("td", { class: "mono" }, s.id.slice(0, 6)),
          el("td", {}, el("a", { href: `#/s/${s.id}`, class: "mono" }, short(s.id)), s.name ? ` ${s.name}` : ""),
          el("td", {}, s.replica || ""), el("td", {}, s.mode), el("td", { class: "mono" }, s.protocol_version || ""),
          el("td", {}, badge(s.label, s.label === "running" ? "running" : undefined)), el("td", {}, when(s.started_at)))))));
  }
  setBrush(range) {
    this.brush = range;
    fill(this.brushNote, range ? [`selected ${ms(range[0])} – ${ms(range[1])} `, el("button", { onclick: () => this.setBrush(null) }, "clear")] : "");
    this.refilter(false); this.timeline.draw();
  }
  matches(i) {
    const f = this.frames;
    if (this.brush && (f.t[i] < this.brush[0] || f.t[i] > this.brush[1])) return false;
    if (!this.filter) return true;
    return f.methodName(i).toLowerCase().includes(this.filter) || f.kindName(i).includes(this.filter) || String(f.id[i]).toLowerCase() === this.filter || `#${f.seq[i]}` === this.filter;
  }
  refilter(keepScroll = true) {
    const rows = [];
    for (let i = 0; i < this.frames.length; i++) if (this.matches(i)) rows.push(i);
    this.list.setRows(rows, keepScroll);
    const reading = this.reading ? ` · reading frames up to #${(this.data.last_seq || 0).toLocaleString()}…` : "";
    this.count.textContent = `${rows.length.toLocaleString()} of ${this.frames.length.toLocaleString()} frames${reading}`;
  }
  async loadStats() {
    // After the first paint: the page is usable while these are read.
    try {
      const ref = this.many ? this.data.conversation : this.data.session.id;
      const stats = await api(`/api/sessions/${encodeURIComponent(ref)}/stats`);
      this.stats = stats; this.groups = stats.groups;
      // What the first frames did not say of the handshake: the header fills in.
      for (const [key, value] of Object.entries(stats.facts || {})) this.data.session[key] = this.data.session[key] || value;
      this.renderHeader(); this.renderStats(); this.timeline.draw();
    } catch (error) { showError(this.statsBox, error); }
  }
  renderStats() {
    const latency = this.stats.latency;
    const max = (hist) => Math.max(1, ...hist);
    const tools = this.stats.tools;
    const top = tools.length ? tools[0].bytes : 1;
    fill(this.statsBox, 
      el("div", { class: "split" },
        el("div", {}, el("h2", {}, "Latency per method"),
          el("table", { class: "grid", "data-testid": "latency" },
            el("thead", {}, el("tr", {}, ["method", "calls", "median", "p95", "max", "histogram (0.3 ms … 10 s, log)"].map((h, i) => el("th", { class: i && i < 5 ? "num" : "" }, h)))),
            el("tbody", {}, latency.map((m) => el("tr", {},
              el("td", { class: "mono" }, m.method), el("td", { class: "num" }, m.count), el("td", { class: "num" }, ms(m.median)),
              el("td", { class: "num" }, ms(m.p95)), el("td", { class: "num" }, ms(m.max)),
              el("td", {}, el("span", { class: "hist", title: m.hist.join(" ") }, m.hist.map((n) => el("span", { style: `height:${Math.round((n / max(m.hist)) * 18)}px` }))))))))),
        el("div", {}, el("h2", {}, "Bytes per tool result"),
          tools.length ? el("table", { class: "grid", "data-testid": "tool-bytes" },
            el("thead", {}, el("tr", {}, ["tool", "calls", "total", "mean", "largest", ""].map((h, i) => el("th", { class: i && i < 5 ? "num" : "" }, h)))),
            el("tbody", {}, tools.map((t) => el("tr", {},
              el("td", { class: "mono" }, t.tool), el("td", { class: "num" }, t.calls), el("td", { class: "num" }, bytes(t.bytes)),
              el("td", { class: "num" }, bytes(t.mean)), el("td", { class: "num" }, bytes(t.max)),
              el("td", {}, el("span", { class: "bar", style: `width:${Math.max(2, Math.round((t.bytes / top) * 120))}px` }))))))
            : el("p", { class: "muted" }, "No tool results."))),
      this.groups.length ? [el("h2", {}, "Grouped operations"),
        el("table", { class: "grid", "data-testid": "groups" },
          el("thead", {}, el("tr", {}, ["operation", "kind", "steps", "total", "frames"].map((h) => el("th", {}, h)))),
          el("tbody", {}, this.groups.map((g) => el("tr", {},
            el("td", { class: "mono" }, g.label), el("td", {}, g.kind === "task" ? "task polls" : "input_required rounds"),
            el("td", { class: "num" }, g.steps), el("td", { class: "num" }, ms(g.duration_ms)),
            el("td", { class: "mono" }, g.seqs.map((seq) => el("a", { href: `#/s/${encodeURIComponent(this.ref)}/f/${seq}` }, `${this.frameName(seq)} `)))))))] : null,
      this.stats.conversations && this.stats.conversations.length ? [el("h2", {}, "Conversations in this session"),
        el("ul", { "data-testid": "conversations" }, this.stats.conversations.map((c) => el("li", {},
          el("a", { href: `#/s/${encodeURIComponent(c.id)}`, class: "mono" }, c.id), ` · ${c.exchanges} exchange${c.exchanges === 1 ? "" : "s"} here`)))] : null,
      this.events.length ? [el("h2", {}, `stderr and process events (${this.events.length})`),
        el("pre", { class: "panel mono", style: "max-height:220px;overflow:auto;margin:0", "data-testid": "events" },
          this.events.slice(-2000).map((e) => `+${(e.t / 1000).toFixed(3)}s ${this.many ? this.sessions[e.sess].id.slice(0, 6) + " " : ""}${e.kind.padEnd(14)} ${e.text}\n`).join(""))] : null);
  }
  async select(seq) {
    this.list.selected = seq; this.list.render();
    if (seq === null || Number.isNaN(seq)) return;
    const index = this.frames.indexOfSeq(seq);
    if (index !== undefined) { const row = this.list.rows.indexOf(index); if (row >= 0) this.list.scrollTo(row); }
    // A conversation's frame is read from the session that recorded it, by its seq there.
    const sess = index === undefined ? 0 : this.frames.sessionOf(index);
    const sessionId = this.sessions[sess].id;
    const recorded = index === undefined ? seq : this.frames.recordedSeq(index);
    if (this.many && index === undefined) { fill(this.detailBox, el("p", { class: "muted" }, `No frame #${seq} in this conversation.`)); return; }
    try {
      const frame = await api(`/api/sessions/${sessionId}/frames/${recorded}`);
      const pair = frame.pair ? this.frames.placeOf(sess, frame.pair) : null;
      fill(this.detailBox, frameDetail(frame, {
        bytes: `/api/sessions/${sessionId}/frames/${recorded}/bytes`,
        pair: pair ? `#/s/${encodeURIComponent(this.ref)}/f/${pair}` : null,
        session: this.many ? sessionId : null,
        recordedIn: sessionId, recordedSeq: recorded,
      }));
    } catch (error) { showError(this.detailBox, error); }
  }
  goLive() {
    openLive({ session: this.data.session.id, after: this.lastId, after_event: this.lastEventId }, {
      frames: (news) => {
        const added = this.frames.append(news.frames);
        if (news.events && news.events.length) this.events.push(...news.events);
        if (news.session) { this.data.session = { ...this.data.session, ...news.session }; }
        if (news.last_id) this.lastId = Math.max(this.lastId, news.last_id);
        if (added || news.events.length || news.session) this.scheduleRedraw();
      },
    });
  }
  scheduleRedraw() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = null; this.renderHeader(); this.refilter(true); this.timeline.draw();
    });
  }
}

async function sessionPage(ref, seq) {
  closeLive();
  fill(main, el("p", { class: "muted" }, "Loading the session…"));
  try {
    const data = await api(`/api/sessions/${encodeURIComponent(ref)}/timeline`);
    performance.mark("mcptape-data");
    const page = new SessionPage(ref, data);
    state.session = page;
    page.mount();
    performance.mark("mcptape-mounted");
    // When the page has been painted (the frame after this one): what bench_viewer.py reads.
    requestAnimationFrame(() => setTimeout(() => { window.__mcptapePainted = performance.now(); }));
    if (seq !== null) page.select(seq);
  } catch (error) { showError(main, error); }
}

// -- a frame's detail ---------------------------------------------------------------------

function tree(value, key, depth = 0) {
  const label = key === undefined ? null : el("span", { class: "key" }, `${JSON.stringify(key)}: `);
  if (value === null || typeof value !== "object") {
    const cls = typeof value === "string" ? "str" : typeof value === "number" ? "num" : "lit";
    return el("div", { class: "leaf" }, label, el("span", { class: cls }, JSON.stringify(value)));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const open = depth < 3 && entries.length <= 50;
  const details = el("details", open ? { open: true } : {},
    el("summary", {}, label, Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`));
  const grow = () => {
    if (details.dataset.filled) return;
    details.dataset.filled = "1";
    // Children are built when opened: a 10,000-element array costs nothing until then.
    for (const [k, v] of entries.slice(0, 2000)) details.append(tree(v, Array.isArray(value) ? undefined : k, depth + 1));
    if (entries.length > 2000) details.append(el("div", { class: "leaf muted" }, `… ${entries.length - 2000} more`));
  };
  if (open) grow(); else details.addEventListener("toggle", grow);
  return details;
}

function frameDetail(frame, links) {
  let parsed = null;
  if (frame.is_text && !frame.text_cut) { try { parsed = JSON.parse(frame.text); } catch { parsed = null; } }
  const copy = (text, button) => {
    const done = () => { button.textContent = "copied"; setTimeout(() => { button.textContent = "copy"; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, () => {});
    else { const area = el("textarea", {}, text); document.body.append(area); area.select(); document.execCommand("copy"); area.remove(); done(); }
  };
  const pairLink = links.pair ? el("a", { href: links.pair, "data-testid": "pair" }, frame.kind === "request" ? `answered by #${frame.pair}` : `answers #${frame.pair}`) : null;
  const callButton = el("button", {}, "copy");
  if (frame.call) callButton.addEventListener("click", () => copy(frame.call, callButton));
  return el("div", { "data-testid": "frame-detail" },
    el("h2", { style: "margin-top:0" }, `#${frame.seq} ${frame.kind} ${frame.method || ""} ${frame.id === null ? "" : "id " + frame.id}`),
    el("div", { class: "cards" },
      el("span", {}, frame.direction === "c2s" ? "client → server" : "server → client"),
      el("span", {}, `from ${frame.origin}`), el("span", {}, `+${(frame.t / 1000).toFixed(3)} s`),
      el("span", {}, bytes(frame.size)), pairLink,
      links.session ? el("a", { href: `#/s/${links.session}`, class: "mono", "data-testid": "frame-session" }, `session ${short(links.session)}`) : null,
      el("a", { href: links.bytes, download: "" }, "download bytes")),
    frame.call ? [el("h2", {}, "as a command"), el("pre", { "data-testid": "call-command" }, frame.call), callButton,
      " ", el("a", { href: `/client?${new URLSearchParams({ session: links.recordedIn, seq: links.recordedSeq })}`, "data-testid": "resend" }, "edit and resend in the client")] : null,
    parsed !== null ? [el("h2", {}, "message"), el("div", { class: "tree", "data-testid": "json-tree" }, tree(parsed))] : null,
    el("h2", {}, frame.is_text ? "exact text" : "exact bytes (not UTF-8: hex)"),
    frame.is_text ? el("pre", { "data-testid": "exact-bytes" }, frame.text, frame.text_cut ? "\n… (cut: download the bytes for the whole frame)" : "")
      : el("pre", { "data-testid": "hex" }, frame.hex, frame.hex_cut ? "\n… (cut)" : ""),
    frame.meta ? [el("h2", {}, "transport metadata"), metaTable(frame.meta)] : null);
}

function metaTable(meta) {
  const rows = [];
  for (const [key, value] of Object.entries(meta)) {
    if (key === "headers" && value && typeof value === "object") {
      for (const [name, header] of Object.entries(value)) rows.push([`header ${name}`, header]);
    } else rows.push([key, typeof value === "object" ? JSON.stringify(value) : String(value)]);
  }
  return el("table", { class: "grid", "data-testid": "http-meta" }, el("tbody", {}, rows.map(([k, v]) => el("tr", {}, el("td", { class: "mono" }, k), el("td", { class: "mono wrap" }, v)))));
}

// -- compare ------------------------------------------------------------------------------

async function comparePage(query) {
  const left = el("input", { type: "text", placeholder: "original: id, prefix, name or last", size: 34, value: query.get("left") || "", "data-testid": "left" });
  const right = el("input", { type: "text", placeholder: "replay or other session", size: 34, value: query.get("right") || "", "data-testid": "right" });
  const out = el("div");
  const go = () => { location.hash = `#/compare?${new URLSearchParams({ left: left.value.trim(), right: right.value.trim() })}`; };
  fill(main, el("h1", {}, "Compare two sessions"),
    el("div", { class: "toolbar" }, left, "⇄", right, el("button", { class: "primary", onclick: go, "data-testid": "compare" }, "Compare"),
      el("span", { class: "muted" }, "Exchanges are compared as `mcptape replay` compares them (timestamps, minted ids and UUIDs left out). Given only a replay, its original is the left side.")), out);
  if (!query.get("right")) { out.append(el("p", { class: "muted" }, "Name the two sessions.")); return; }
  fill(out, el("p", { class: "muted" }, "Comparing…"));
  try {
    const params = new URLSearchParams({ right: query.get("right") });
    if (query.get("left")) params.set("left", query.get("left"));
    const body = await api(`/api/compare?${params}`);
    if (!left.value) left.value = body.left.id;
    const side = (s) => s ? [el("div", { class: "mono" }, `${s.method || "?"} ${s.subject || ""}`, s.error ? [" ", badge("error", "bad")] : null), s.response ? el("pre", {}, s.response) : el("span", { class: "muted" }, "no response")] : el("span", { class: "muted" }, "—");
    fill(out, 
      el("p", { "data-testid": "compare-summary" }, el("b", {}, body.summary), ` · left ${body.left.source} (${body.left.exchanges} exchanges) · right ${body.right.source} (${body.right.exchanges} exchanges)`),
      el("table", { class: "grid", "data-testid": "compare-table" },
        el("thead", {}, el("tr", {}, ["#", "status", `left: ${body.left.name || short(body.left.id)}`, `right: ${body.right.name || short(body.right.id)}`].map((h) => el("th", {}, h)))),
        el("tbody", {}, body.rows.map((row) => el("tr", { class: row.status === "match" ? "" : "differs", "data-status": row.status },
          el("td", { class: "num" }, row.index), el("td", {}, badge(row.status, row.status === "no response" ? "bad" : row.status)),
          el("td", {}, side(row.left)),
          el("td", {}, side(row.right),
            row.differences.length ? el("div", { class: "diff", "data-testid": "differences" }, row.differences.map((d) => el("div", {},
              el("span", { class: "ptr" }, d.pointer), " ", el("span", { class: "l" }, d.left_absent ? "(absent)" : JSON.stringify(d.left)), " → ",
              el("span", { class: "r" }, d.right_absent ? "(absent)" : JSON.stringify(d.right))))) : null))))));
  } catch (error) { showError(out, error); }
}

// -- SQL ----------------------------------------------------------------------------------

const DEFAULT_QUERY = "select method, count(*) as calls, round(avg(latency_ms), 1) as avg_ms, max(latency_ms) as max_ms\nfrom exchanges group by 1 order by 2 desc";

async function sqlPage() {
  const text = el("textarea", { spellcheck: "false", "data-testid": "query" }, sessionStorage.getItem("mcptape-sql") || DEFAULT_QUERY);
  const out = el("div", { class: "result" });
  const csv = el("a", { href: "#", "data-testid": "csv", download: "query.csv" }, "download CSV");
  const relations = el("div", { class: "relations panel", "data-testid": "relations" }, el("p", { class: "muted" }, "Loading…"));
  const run = async () => {
    sessionStorage.setItem("mcptape-sql", text.value);
    csv.href = `/api/sql.csv?${new URLSearchParams({ q: text.value })}`;
    fill(out, el("p", { class: "muted" }, "Running…"));
    try {
      const body = await api("/api/sql", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ query: text.value }) });
      const cell = (v) => v === null ? el("span", { class: "muted" }, "NULL") : typeof v === "object" ? `<${v.bytes} bytes: ${v.hex}…>` : String(v);
      fill(out, 
        el("p", { class: "muted", "data-testid": "row-count" }, `${body.rows.length} row(s)${body.truncated ? " shown (the first 1,000; the CSV has them all)" : ""}`),
        el("table", { class: "grid", "data-testid": "sql-result" },
          el("thead", {}, el("tr", {}, body.columns.map((c) => el("th", {}, c)))),
          el("tbody", {}, body.rows.map((row) => el("tr", {}, row.map((v) => el("td", { class: typeof v === "number" ? "num" : "wrap" }, cell(v))))))));
    } catch (error) { showError(out, error); }
  };
  text.addEventListener("keydown", (event) => { if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); run(); } });
  csv.href = `/api/sql.csv?${new URLSearchParams({ q: text.value })}`;
  text.addEventListener("input", () => { csv.href = `/api/sql.csv?${new URLSearchParams({ q: text.value })}`; });
  fill(main, el("h1", {}, "SQL"),
    el("div", { class: "sql" }, relations,
      el("div", {}, text, el("div", { class: "toolbar", style: "margin-top:6px" },
        el("button", { class: "primary", onclick: run, "data-testid": "run" }, "Run (Ctrl+Enter)"), csv,
        el("span", { class: "muted" }, "read-only, 10 s limit, as `mcptape sql` runs it")), out)));
  try {
    const body = await api("/api/sql/schema");
    fill(relations, ...body.relations.map((r) => el("details", { open: r.type === "view" ? true : null },
      el("summary", { "data-relation": r.name }, `${r.name} `, el("span", { class: "muted" }, r.type)),
      el("ul", {}, r.columns.map((c) => el("li", {}, c))))));
  } catch (error) { showError(relations, error); }
}

// -- start ----------------------------------------------------------------------------------

window.addEventListener("hashchange", route);
login().then(route, (error) => showError(main, error));
