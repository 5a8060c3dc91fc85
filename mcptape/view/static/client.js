// mcptape ui, the client page: drive one MCP server by hand through mcptape's client core.
// No framework, no build step, no network but this server. The server keeps the session
// (one per page connection): this script posts small JSON requests and follows one
// event stream. Everything the server says is shown as text, never as markup.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const root = $("#client");
const KINDS = [["tools", "Tools"], ["resources", "Resources"], ["templates", "Templates"], ["prompts", "Prompts"]];
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const VERSIONS = ["auto", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const TRAFFIC_KEPT = 400;

const S = {
  conn: null, source: null, hello: null, ops: {}, opCount: 0, tab: "tools",
  lists: {}, selected: {}, subscribed: new Set(), logs: [], traffic: [], answered: [], resend: null,
};

// -- helpers (the viewer's script has the same small ones; each page loads one script) ------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else if (key === "style") node.style.cssText = value;
    else if (key === "value") node.value = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

function pretty(value) { return JSON.stringify(value, null, 2); }

async function call(path, body) {
  const options = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) throw new Error("Not logged in: open the URL `mcptape ui` printed (it holds the token), then this page again.");
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) { const e = new Error(data.error || `HTTP ${response.status}`); e.data = data; throw e; }
  return data;
}

const post = (name, body) => call(`/api/client/${name}`, body);

function problem(where, error) {
  fill(where, el("div", { class: "error", "data-testid": "error" }, String(error.message || error)));
}

function tree(value, depth = 0) {
  // A JSON value as nested <details>: strings stay text (textContent), whatever they hold.
  if (value === null || typeof value !== "object") return el("span", { class: typeof value === "string" ? "str" : "num" }, JSON.stringify(value));
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const box = el("details", depth < 2 ? { open: true } : {}, el("summary", {}, Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`));
  for (const [k, v] of entries.slice(0, 500)) box.append(el("div", { class: "leaf" }, el("span", { class: "key" }, `${JSON.stringify(k)}: `), tree(v, depth + 1)));
  return box;
}

// -- login and start --------------------------------------------------------------------------

async function login() {
  const match = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (!match) return;
  history.replaceState(null, "", location.pathname + location.search);
  await fetch("/api/login", { method: "POST", credentials: "same-origin", headers: { "X-Mcptape-Token": decodeURIComponent(match[1]) } });
}

async function start() {
  const query = new URLSearchParams(location.search);
  let about;
  try { about = await call("/api/client"); } catch (error) { problem(root, error); return; }
  S.about = about;
  const server = el("select", { "data-testid": "server" }, el("option", { value: "" }, "registry entry…"),
    about.servers.map((s) => el("option", { value: s.name, title: s.description }, `${s.name} (${s.transport})`)));
  const url = about.allowUrl.length ? el("input", { type: "text", size: 34, placeholder: `or a URL (${about.allowUrl.join(", ")})`, "data-testid": "url" }) : null;
  const transport = url ? el("select", { "data-testid": "transport" }, el("option", { value: "http" }, "streamable HTTP"), el("option", { value: "sse" }, "legacy SSE")) : null;
  const version = el("select", { "data-testid": "version", title: "protocol revision (auto: server/discover, then initialize)" }, VERSIONS.map((v) => el("option", { value: v }, v)));
  const go = el("button", { class: "primary", "data-testid": "connect" }, "Connect");
  const stop = el("button", { "data-testid": "disconnect", disabled: true }, "Disconnect");
  const state = el("span", { class: "state", "data-testid": "state" }, "disconnected");
  const notices = el("div", { class: "notices", "data-testid": "notices" });
  const body = el("div");
  S.ui = { server, url, transport, version, go, stop, state, notices, body };
  go.addEventListener("click", () => connect());
  stop.addEventListener("click", () => disconnect());
  fill(root, el("h1", {}, "Client"),
    el("div", { class: "connect" }, server, url, transport, version, go, stop, state),
    el("p", { class: "muted" }, "Only registry entries (mcptape ui --config) can start a server; a URL must be allowed by --allow-url. Everything is recorded as a session of mode client."),
    notices, body);
  if (query.get("session") && query.get("seq")) {
    try { S.resend = await call(`/api/client/recorded?${new URLSearchParams({ session: query.get("session"), seq: query.get("seq") })}`); }
    catch (error) { problem(body, error); return; }
    const name = query.get("server") || S.resend.server;
    if (name) { server.value = name; await connect(); }
    else fill(body, resendPanel(), el("p", { class: "muted" }, `The recorded session (${S.resend.sessionName || S.resend.sessionId.slice(0, 12)}) is not a registry entry: choose one and connect.`));
    return;
  }
  if (query.get("server")) { server.value = query.get("server"); await connect(); }
}

// -- the connection ---------------------------------------------------------------------------

async function connect() {
  const ui = S.ui;
  if (S.conn) await disconnect();
  const body = { protocolVersion: ui.version.value === "auto" ? null : ui.version.value };
  if (ui.url && ui.url.value.trim()) { body.url = ui.url.value.trim(); body.transport = ui.transport.value; }
  else body.server = ui.server.value;
  if (!body.server && !body.url) { problem(ui.body, new Error("Choose a registry entry to connect to.")); return; }
  ui.go.disabled = true;
  ui.state.textContent = "connecting…";
  fill(ui.notices);
  fill(ui.body, el("p", { class: "muted" }, `Connecting to ${body.server || body.url}…`));
  try {
    const answer = await post("connect", body);
    S.conn = answer.conn;
    S.hello = answer.hello;
  } catch (error) {
    ui.go.disabled = false;
    ui.state.textContent = "error";
    ui.state.className = "state error";
    const said = (error.data && error.data.events || []).filter((e) => e.event === "notice").map((e) => e.data.text);
    problem(ui.body, new Error([error.message, ...said].join("\n")));
    return;
  }
  ui.go.disabled = false;
  ui.stop.disabled = false;
  follow();
  render();
  await loadList("tools");
  if (S.resend) openResend();
}

async function disconnect() {
  const conn = S.conn;
  if (!conn) return;
  S.conn = null;
  if (S.source) { S.source.close(); S.source = null; }
  $("#live").classList.remove("on");
  S.ui.stop.disabled = true;
  S.ui.state.textContent = "disconnected";
  S.ui.state.className = "state";
  try {
    const closed = await post("close", { conn });
    if (closed.sessionId) S.ui.notices.append(el("div", {}, "Recorded: ", el("a", { href: `/#/s/${closed.sessionId}`, "data-testid": "recorded-link" }, `session ${closed.sessionId.slice(0, 12)}`)));
  } catch (error) { problem(S.ui.notices, error); }
  S.lists = {}; S.selected = {};
}

window.addEventListener("pagehide", () => {
  // The server closes an abandoned connection after a while anyway; this says it at once.
  if (S.conn) fetch("/api/client/close", { method: "POST", keepalive: true, credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ conn: S.conn }) });
});

function follow() {
  const source = new EventSource(`/api/client/events?${new URLSearchParams({ conn: S.conn })}`);
  S.source = source;
  source.onopen = () => $("#live").classList.add("on");
  source.onerror = () => $("#live").classList.remove("on");
  const on = (name, handler) => source.addEventListener(name, (event) => handler(JSON.parse(event.data)));
  on("state", (d) => { S.ui.state.textContent = d.state + (d.detail ? ` (${d.detail})` : ""); S.ui.state.className = `state ${d.state}`; });
  on("log", (d) => { S.logs.push(d); if (S.logs.length > 2000) S.logs.shift(); appendLog(d); });
  on("progress", (d) => { const op = S.ops[d.op]; if (op) op.progress(d); });
  on("list_changed", (d) => listChanged(d.kind));
  on("resource_updated", (d) => resourceUpdated(d.uri));
  on("question", (d) => showQuestion(d));
  on("answered", (d) => { S.answered.push(d); renderAnswered(); });
  on("traffic", (d) => { S.traffic.push(d); if (S.traffic.length > TRAFFIC_KEPT) S.traffic.shift(); appendTraffic(d); });
  on("notice", (d) => S.ui.notices.append(el("div", {}, d.text)));
  on("notification", (d) => S.ui.notices.append(el("div", {}, `${d.method} ${JSON.stringify(d.params).slice(0, 200)}`)));
  on("hello", (d) => { S.hello = d; });
  on("recording", (d) => {
    S.hello.sessionId = d.sessionId;
    const slot = $("[data-testid=session-slot]");
    if (slot) fill(slot, el("a", { href: `/#/s/${d.sessionId}`, "data-testid": "session-link" }, `session ${d.sessionId.slice(0, 12)}`));
  });
  on("closed", () => { source.close(); $("#live").classList.remove("on"); });
}

const reloads = {};

function listChanged(kind) {
  // Servers announce changes in bursts (server-everything: one per tool it adds): one line
  // per list, counting, and one reload once the burst is over.
  S.changed = S.changed || {};
  const count = (S.changed[kind] = (S.changed[kind] || 0) + 1);
  let line = $(`[data-changed=${kind}]`, S.ui.notices);
  if (!line) { line = el("div", { "data-testid": "list-changed", "data-changed": kind }); S.ui.notices.append(line); }
  line.textContent = `the server's ${kind} list changed${count > 1 ? ` (${count} times)` : ""}: reloaded at ${new Date().toLocaleTimeString()}`;
  clearTimeout(reloads[kind]);
  reloads[kind] = setTimeout(() => loadList(kind), 150);
}

// -- the page once connected ------------------------------------------------------------------

function render() {
  const hello = S.hello;
  const info = hello.serverInfo || {};
  const caps = hello.capabilities || {};
  const link = el("span", { "data-testid": "session-slot" }, hello.sessionId ? el("a", { href: `/#/s/${hello.sessionId}`, "data-testid": "session-link" }, `session ${hello.sessionId.slice(0, 12)}`) : "this session");
  $("#recording").textContent = hello.recordedIn ? `recording into ${hello.recordedIn}` : "";
  const tabs = el("div", { class: "tabs", "data-testid": "tabs" });
  const pane = el("div", { "data-testid": "pane" });
  S.ui.tabs = tabs; S.ui.pane = pane;
  S.ui.questions = el("div", { "data-testid": "questions" });
  for (const [kind, label] of [...KINDS, ["answers", "Server requests"], ["logs", "Logs"], ["traffic", "Traffic"]]) {
    tabs.append(el("button", { "data-tab": kind, onclick: () => showTab(kind) }, label, el("span", { class: "count", "data-count": kind })));
  }
  fill(S.ui.body,
    el("div", { class: "hello panel", "data-testid": "server-info" },
      el("div", { class: "cards" },
        el("span", {}, el("b", {}, info.name || "?"), " ", info.version || ""),
        el("span", {}, `protocol ${hello.protocolVersion} via ${hello.negotiatedWith}`),
        el("span", {}, "capabilities: ", Object.keys(caps).join(", ") || "none"),
        el("span", {}, "recorded as ", link)),
      hello.instructions ? el("div", { class: "instructions", "data-testid": "instructions" }, hello.instructions) : null,
      el("details", {}, el("summary", {}, "capabilities"), el("div", { class: "tree" }, tree(caps)))),
    S.ui.questions, S.resend ? el("div", { "data-testid": "resend-slot" }) : null, tabs, pane);
  showTab(S.tab);
}

function showTab(kind) {
  S.tab = kind;
  for (const button of S.ui.tabs.querySelectorAll("button")) button.classList.toggle("on", button.dataset.tab === kind);
  if (kind === "answers") return answersPane();
  if (kind === "logs") return logsPane();
  if (kind === "traffic") return trafficPane();
  listPane(kind);
  if (!S.lists[kind]) loadList(kind);
}

async function loadList(kind, more = false) {
  if (!S.conn) return;
  const list = more ? S.lists[kind] : { items: [], forms: [], next: null };
  try {
    const page = await post("list", { conn: S.conn, kind, cursor: more ? list.next : null });
    list.items.push(...page.items); list.forms.push(...page.forms); list.next = page.nextCursor; list.unsupported = page.unsupported;
  } catch (error) { list.error = error.message; }
  S.lists[kind] = list;
  const count = S.ui.tabs && S.ui.tabs.querySelector(`[data-count=${kind}]`);
  if (count) count.textContent = list.unsupported ? "" : String(list.items.length) + (list.next ? "+" : "");
  if (S.tab === kind) listPane(kind);
}

function label(kind, item) {
  if (kind === "resources") return item.name || item.uri;
  if (kind === "templates") return item.name || item.uriTemplate;
  return item.name;
}

function listPane(kind) {
  const list = S.lists[kind];
  const detail = el("div", { class: "panel", "data-testid": `${kind}-detail` }, el("p", { class: "muted" }, "Choose one on the left."));
  const items = el("div", { class: "items panel", "data-testid": `${kind}-list` });
  if (!list) items.append(el("p", { class: "muted" }, "Loading…"));
  else if (list.error) problem(items, new Error(list.error));
  else if (list.unsupported) items.append(el("p", { class: "muted" }, `The server offers no ${kind}.`));
  else {
    if (!list.items.length) items.append(el("p", { class: "muted" }, "None."));
    list.items.forEach((item, i) => {
      const name = label(kind, item);
      const row = el("div", { class: "item", "data-item": name, [`data-${kind.slice(0, -1)}`]: name },
        el("div", { class: "name" }, item.title && item.title !== name ? `${name} — ${item.title}` : name),
        el("div", { class: "about" }, item.description || item.uri || item.uriTemplate || ""));
      row.addEventListener("click", () => {
        for (const other of items.querySelectorAll(".item")) other.classList.remove("sel");
        row.classList.add("sel");
        S.selected[kind] = name;
        fill(detail, itemDetail(kind, item, list.forms[i] || []));
      });
      if (S.selected[kind] === name) { row.classList.add("sel"); fill(detail, itemDetail(kind, item, list.forms[i] || [])); }
      items.append(row);
    });
    if (list.next) items.append(el("button", { "data-testid": `more-${kind}`, onclick: () => loadList(kind, true) }, "Load more"));
  }
  fill(S.ui.pane, el("div", { class: "workspace" }, items, detail));
}

function itemDetail(kind, item, fields) {
  if (kind === "tools") return toolDetail(item, fields);
  if (kind === "resources") return resourceDetail(item);
  if (kind === "templates") return templateDetail(item, fields);
  return promptDetail(item, fields);
}

// -- forms from the server's field descriptions (mcptape/client/schemaform.py) ---------------

function fieldEditor(field, initial, path) {
  // {node, get} for one field; get() returns undefined for "not given" and throws on bad input.
  const id = path.join(".");
  const start = initial !== undefined ? initial : field.default;
  const given = (v) => v !== undefined && v !== null && v !== "";
  let input, get;
  if (field.kind === "string" || field.kind === "number" || field.kind === "integer") {
    const type = field.kind === "string" ? ({ email: "email", uri: "url", date: "date" }[field.format] || "text") : "number";
    input = el("input", { type, "data-field": id, step: field.kind === "integer" ? "1" : "any", min: field.minimum, max: field.maximum, value: given(start) ? String(start) : "" });
    get = () => {
      const raw = input.value;
      if (raw === "") return undefined;
      if (field.kind === "string") return raw;
      const number = Number(raw);
      if (Number.isNaN(number) || (field.kind === "integer" && !Number.isInteger(number))) throw new Error(`${id}: ${raw} is not ${field.kind === "integer" ? "an integer" : "a number"}`);
      return number;
    };
  } else if (field.kind === "boolean") {
    if (field.required || given(field.default)) {
      input = el("input", { type: "checkbox", "data-field": id });
      input.checked = start === true;
      get = () => input.checked;
    } else {
      input = el("select", { "data-field": id }, el("option", { value: "" }, "(not given)"), el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
      input.value = start === true ? "true" : start === false ? "false" : "";
      get = () => (input.value === "" ? undefined : input.value === "true");
    }
  } else if (field.kind === "enum") {
    input = el("select", { "data-field": id }, field.required && given(start) ? null : el("option", { value: "" }, "(not given)"),
      field.options.map((o, i) => el("option", { value: String(i) }, o.label)));
    const at = field.options.findIndex((o) => JSON.stringify(o.value) === JSON.stringify(start));
    input.value = at >= 0 ? String(at) : "";
    get = () => (input.value === "" ? undefined : field.options[Number(input.value)].value);
  } else if (field.kind === "multienum") {
    const chosen = Array.isArray(start) ? start.map((v) => JSON.stringify(v)) : [];
    const boxes = field.options.map((o) => { const box = el("input", { type: "checkbox", "data-field": `${id}=${o.label}` }); box.checked = chosen.includes(JSON.stringify(o.value)); return [box, o]; });
    input = el("div", { class: "checks" }, boxes.map(([box, o]) => el("label", {}, box, " ", o.label)));
    get = () => { const out = boxes.filter(([box]) => box.checked).map(([, o]) => o.value); return out.length || field.required ? out : undefined; };
  } else if (field.kind === "array") {
    const rows = el("div", { "data-field": id });
    const editors = [];
    const add = (value) => {
      const editor = fieldEditor({ ...field.items, name: `${field.name}[${editors.length}]`, required: true }, value, [...path, String(editors.length)]);
      const row = el("div", { class: "array-item" }, editor.node, el("button", { title: "remove", onclick: () => { row.remove(); editors.splice(editors.indexOf(editor), 1); } }, "−"));
      editors.push(editor);
      rows.append(row);
    };
    (Array.isArray(start) ? start : []).forEach(add);
    input = el("div", {}, rows, el("button", { "data-add": id, onclick: () => add(undefined) }, "+ item"));
    get = () => { const out = editors.map((e) => e.get()).filter((v) => v !== undefined); return out.length || field.required ? out : undefined; };
  } else if (field.kind === "object") {
    const form = formEditor(field.fields, start && typeof start === "object" ? start : {}, path);
    input = el("fieldset", {}, form.node);
    get = () => { const out = form.get(); return Object.keys(out).length || field.required ? out : undefined; };
  } else {
    input = el("textarea", { "data-field": id, placeholder: "JSON" }, given(start) ? pretty(start) : "");
    get = () => { if (!input.value.trim()) return undefined; try { return JSON.parse(input.value); } catch (e) { throw new Error(`${id}: not JSON (${e.message})`); } };
  }
  const title = field.title && field.title !== field.name ? `${field.name} — ${field.title}` : field.name;
  const node = el("div", { class: "field" },
    el("label", { class: "title" }, title, field.required ? el("span", { class: "req", title: "required" }, " *") : null, el("span", { class: "muted" }, ` ${field.kind}${field.format ? ` (${field.format})` : ""}`)),
    field.description ? el("div", { class: "desc" }, field.description) : null, input);
  return { node, get };
}

function formEditor(fields, values, path = []) {
  const editors = fields.map((f) => [f, fieldEditor(f, values[f.name], [...path, f.name])]);
  const node = el("div", { class: "form" }, editors.map(([, e]) => e.node));
  const get = () => {
    const out = {};
    const missing = [];
    for (const [f, e] of editors) {
      const value = e.get();
      if (value === undefined) { if (f.required) missing.push([...path, f.name].join(".")); } else out[f.name] = value;
    }
    if (missing.length) throw new Error(`required: ${missing.join(", ")}`);
    return out;
  };
  return { node, get };
}

function argumentsEditor(fields, initial) {
  // The generated form, with a raw-JSON editor to switch to (what no form can draw, or by choice).
  const box = el("div", { "data-testid": "arguments" });
  const toggle = el("button", { "data-testid": "raw-toggle" }, "edit as JSON");
  let form = null, raw = null, values = initial || {};
  const showForm = () => { form = formEditor(fields, values); raw = null; toggle.textContent = "edit as JSON"; fill(box, fields.length ? form.node : el("p", { class: "muted" }, "No arguments.")); };
  const showRaw = () => { raw = el("textarea", { class: "json", "data-testid": "raw-json" }, pretty(values)); form = null; toggle.textContent = "edit as a form"; fill(box, raw); };
  toggle.addEventListener("click", () => {
    try { values = get(); } catch (error) { problem(box, error); return; }
    if (form) showRaw(); else showForm();
  });
  const get = () => {
    if (raw) { try { const v = JSON.parse(raw.value || "{}"); if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("a JSON object"); return v; } catch (e) { throw new Error(`arguments: ${e.message}`); } }
    return form.get();
  };
  showForm();
  return { node: el("div", {}, box, toggle), get, showRaw };
}

// -- operations ---------------------------------------------------------------------------------

function operation(method, params, out, { onResult } = {}) {
  // Run one request as a named operation: a live progress bar, a cancel button, the outcome.
  const op = `op${++S.opCount}`;
  const bar = el("progress", { "data-testid": "progress" });
  const text = el("span", { class: "muted", "data-testid": "progress-text" }, "waiting for the answer…");
  const cancel = el("button", { "data-testid": "cancel", onclick: () => post("cancel", { conn: S.conn, op }) }, "Cancel");
  const line = el("div", { class: "progress", "data-op": op }, bar, text, cancel);
  fill(out, line);
  S.ops[op] = {
    progress(d) {
      if (typeof d.total === "number" && d.total > 0) { bar.max = d.total; bar.value = Math.min(d.progress, d.total); }
      else bar.removeAttribute("value");
      text.textContent = `${d.progress}${typeof d.total === "number" ? ` / ${d.total}` : ""}${d.message ? ` — ${d.message}` : ""}`;
      line.dataset.progress = String(d.progress);
      if (typeof d.total === "number") line.dataset.total = String(d.total);
    },
  };
  // The answer (this post) and the progress before it (the event stream) travel apart: the
  // bar keeps taking progress that lands after the answer, unless the operation was cancelled.
  const done = post("run", { conn: S.conn, op, method, params }).then((outcome) => {
    if (outcome.status === "cancelled") delete S.ops[op];
    cancel.remove();
    if (outcome.status === "cancelled") { text.textContent = `cancelled after ${Math.round(outcome.ms)} ms`; line.dataset.status = "cancelled"; }
    else { if (!line.dataset.progress) line.remove(); else line.dataset.status = "done"; }
    out.append(outcomeView(outcome));
    if (onResult) onResult(outcome);
    return outcome;
  }, (error) => { delete S.ops[op]; cancel.remove(); out.append(el("div", { class: "error", "data-testid": "error" }, error.message)); });
  return done;
}

function outcomeView(outcome) {
  const box = el("div", { class: `result ${outcome.status}`, "data-testid": "result", "data-status": outcome.status });
  box.append(el("div", { class: "cards" }, el("b", {}, outcome.status === "tool-error" ? "tool error (isError)" : outcome.status), el("span", { class: "muted" }, `${outcome.method} · ${outcome.ms.toFixed(1)} ms`)));
  if (outcome.status === "cancelled") return box;
  if (outcome.error) {
    box.append(el("pre", { class: "errored", "data-testid": "error-detail" }, `${outcome.error.category}${outcome.error.code !== null ? ` ${outcome.error.code}` : ""}: ${outcome.error.message}`, outcome.error.data ? `\n${pretty(outcome.error.data)}` : ""));
    return box;
  }
  const result = outcome.result;
  if (outcome.outputCheck) box.append(el("div", { class: outcome.outputCheck.ok ? "muted" : "error", "data-testid": "output-check" }, `outputSchema: ${outcome.outputCheck.message}`));
  if (result && Array.isArray(result.content)) for (const block of result.content) box.append(contentBlock(block));
  if (result && Array.isArray(result.contents)) for (const block of result.contents) box.append(resourceContents(block));
  if (result && Array.isArray(result.messages)) for (const m of result.messages) box.append(el("div", { class: "block" }, el("b", {}, m.role), contentBlock(m.content)));
  if (result && result.structuredContent !== undefined) box.append(el("div", { class: "block", "data-testid": "structured" }, el("b", {}, "structuredContent"), el("div", { class: "tree" }, tree(result.structuredContent))));
  box.append(el("details", {}, el("summary", {}, "the whole answer"), el("pre", { "data-testid": "raw-result" }, pretty(result))));
  return box;
}

function dataUrl(mime, data) { return `data:${mime || "application/octet-stream"};base64,${data}`; }

function contentBlock(block) {
  if (!block || typeof block !== "object") return el("pre", {}, JSON.stringify(block));
  const annotations = block.annotations ? el("div", { class: "muted" }, `annotations: ${JSON.stringify(block.annotations)}`) : null;
  if (block.type === "text") return el("div", { class: "block" }, el("pre", { "data-testid": "text" }, block.text), annotations);
  if (block.type === "image") return el("div", { class: "block" }, el("img", { src: dataUrl(block.mimeType, block.data), alt: "image from the server", "data-testid": "image" }), annotations);
  if (block.type === "audio") return el("div", { class: "block" }, el("audio", { controls: true, src: dataUrl(block.mimeType, block.data), "data-testid": "audio" }), annotations);
  if (block.type === "resource") return el("div", { class: "block resource", "data-testid": "embedded" }, el("div", { class: "muted" }, "embedded resource"), resourceContents(block.resource || {}), annotations);
  if (block.type === "resource_link") {
    return el("div", { class: "block resource", "data-testid": "resource-link" },
      el("div", {}, "link: ", el("a", { href: "#", onclick: (e) => { e.preventDefault(); readInto(block.uri, e.target.parentNode.parentNode); } }, block.uri), block.name ? ` (${block.name})` : ""),
      block.description ? el("div", { class: "muted" }, block.description) : null, annotations);
  }
  return el("div", { class: "block" }, el("div", { class: "muted" }, `content of type ${block.type}`), el("div", { class: "tree" }, tree(block)));
}

function resourceContents(c) {
  const head = el("div", { class: "mono" }, c.uri || "", c.mimeType ? el("span", { class: "muted" }, ` ${c.mimeType}`) : null);
  if (typeof c.text === "string") return el("div", { class: "block" }, head, el("pre", { "data-testid": "resource-text" }, c.text));
  if (typeof c.blob === "string") {
    const isImage = (c.mimeType || "").startsWith("image/");
    return el("div", { class: "block" }, head, isImage ? el("img", { src: dataUrl(c.mimeType, c.blob), alt: c.uri }) : null,
      el("a", { href: dataUrl(c.mimeType, c.blob), download: (c.uri || "resource").split("/").pop() || "resource" }, `download (${Math.round(c.blob.length * 0.75)} bytes)`));
  }
  return el("div", { class: "block" }, head, el("div", { class: "tree" }, tree(c)));
}

function readInto(uri, where) {
  const out = el("div");
  where.append(out);
  operation("resources/read", { uri }, out);
}

// -- tools, resources, templates, prompts -------------------------------------------------------

function toolDetail(tool, fields, initial) {
  const args = argumentsEditor(fields, initial);
  const out = el("div", { "data-testid": "tool-output" });
  const send = el("button", { class: "primary", "data-testid": "call" }, "Call");
  send.addEventListener("click", () => {
    let values;
    try { values = args.get(); } catch (error) { problem(out, error); return; }
    operation("tools/call", { name: tool.name, arguments: values }, out);
  });
  const hints = tool.annotations ? Object.entries(tool.annotations).filter(([k]) => k.endsWith("Hint")).map(([k, v]) => `${k.replace("Hint", "")}: ${v}`).join(" · ") : "";
  return el("div", { "data-testid": "tool-form", "data-name": tool.name },
    el("h2", { style: "margin-top:0" }, tool.name, tool.title ? el("span", { class: "muted" }, ` ${tool.title}`) : null),
    tool.description ? el("p", { class: "desc" }, tool.description) : null,
    hints ? el("p", { class: "muted" }, hints) : null,
    args.node, el("div", { class: "toolbar", style: "margin-top:8px" }, send,
      tool.outputSchema ? el("span", { class: "muted" }, "structuredContent is checked against its outputSchema") : null),
    out);
}

function resourceDetail(resource) {
  const out = el("div", { "data-testid": "resource-output" });
  const read = el("button", { class: "primary", "data-testid": "read", onclick: () => operation("resources/read", { uri: resource.uri }, out) }, "Read");
  const canSubscribe = ((S.hello.capabilities || {}).resources || {}).subscribe;
  const subscribed = S.subscribed.has(resource.uri);
  const sub = canSubscribe ? el("button", { "data-testid": "subscribe" }, subscribed ? "Unsubscribe" : "Subscribe") : null;
  if (sub) sub.addEventListener("click", async () => {
    const method = S.subscribed.has(resource.uri) ? "resources/unsubscribe" : "resources/subscribe";
    const outcome = await operation(method, { uri: resource.uri }, out);
    if (outcome && outcome.status === "ok") {
      if (method === "resources/subscribe") S.subscribed.add(resource.uri); else S.subscribed.delete(resource.uri);
      sub.textContent = S.subscribed.has(resource.uri) ? "Unsubscribe" : "Subscribe";
    }
  });
  return el("div", {}, el("h2", { style: "margin-top:0" }, resource.name || resource.uri),
    el("div", { class: "mono" }, resource.uri), resource.description ? el("p", { class: "desc" }, resource.description) : null,
    resource.mimeType ? el("p", { class: "muted" }, resource.mimeType) : null,
    el("div", { class: "toolbar" }, read, sub, el("span", { class: "muted", "data-testid": "updated" })), out);
}

function resourceUpdated(uri) {
  const note = el("div", { "data-testid": "resource-updated" }, `updated: ${uri}`);
  S.ui.notices.append(note);
  if (S.tab === "resources" && S.selected.resources) {
    const mark = $("[data-testid=updated]", S.ui.pane);
    if (mark) mark.textContent = `updated at ${new Date().toLocaleTimeString()}`;
  }
  if (S.subscribed.has(uri)) {
    const out = el("div");
    S.ui.notices.append(out);
    operation("resources/read", { uri }, out);
  }
}

function expand(template, values) {
  // RFC 6570 level 1-3, what resource templates use: {var} {+var} {#var} {/var} {.var} {?a,b} {&a}.
  return template.replace(/\{([+#./;?&]?)([^}]*)\}/g, (_, op, spec) => {
    const names = spec.split(",").map((n) => n.trim().replace(/\*$/, "").split(":")[0]).filter(Boolean);
    const enc = (v) => (op === "+" || op === "#" ? encodeURI(v) : encodeURIComponent(v));
    const present = names.filter((n) => values[n] !== undefined && values[n] !== "");
    if (op === "?" || op === "&") return present.length ? op + present.map((n) => `${n}=${enc(values[n])}`).join("&") : "";
    if (op === ";") return present.map((n) => `;${n}=${enc(values[n])}`).join("");
    const sep = { "": ",", "+": ",", "#": ",", "/": "/", ".": "." }[op];
    const joined = present.map((n) => enc(values[n])).join(sep);
    return present.length ? (op === "+" || op === "" ? "" : op) + joined : "";
  });
}

function templateDetail(template, fields) {
  const form = formEditor(fields, {});
  const out = el("div", { "data-testid": "template-output" });
  const read = el("button", { class: "primary", "data-testid": "read-template" }, "Read");
  read.addEventListener("click", () => {
    let values;
    try { values = form.get(); } catch (error) { problem(out, error); return; }
    operation("resources/read", { uri: expand(template.uriTemplate, values) }, out);
  });
  return el("div", {}, el("h2", { style: "margin-top:0" }, template.name || template.uriTemplate),
    el("div", { class: "mono" }, template.uriTemplate), template.description ? el("p", { class: "desc" }, template.description) : null,
    form.node, el("div", { class: "toolbar", style: "margin-top:8px" }, read), out);
}

function promptDetail(prompt, fields) {
  const form = formEditor(fields, {});
  const out = el("div", { "data-testid": "prompt-output" });
  const get = el("button", { class: "primary", "data-testid": "get-prompt" }, "Get");
  get.addEventListener("click", () => {
    let values;
    try { values = form.get(); } catch (error) { problem(out, error); return; }
    operation("prompts/get", { name: prompt.name, arguments: values }, out);
  });
  return el("div", {}, el("h2", { style: "margin-top:0" }, prompt.name),
    prompt.description ? el("p", { class: "desc" }, prompt.description) : null, form.node,
    el("div", { class: "toolbar", style: "margin-top:8px" }, get), out);
}

// -- the server's requests: asked in the page, or answered by rules --------------------------------

function showQuestion(q) {
  const box = el("div", { class: "question", "data-testid": "question", "data-method": q.method, "data-question": q.id });
  const out = el("div");
  const send = async (body) => {
    try { await post("answer", { conn: S.conn, question: q.id, ...body }); box.remove(); }
    catch (error) { problem(out, error); }
  };
  const params = q.params || {};
  let body;
  if (q.method === "elicitation/create" && q.mode === "url") {
    body = el("div", {}, el("p", {}, params.message || ""),
      // Only a web address is a link: a server must not hand the page a javascript: or data: one.
      el("p", {}, "The server asks you to open: ", /^https?:\/\//i.test(String(params.url))
        ? el("a", { href: params.url, target: "_blank", rel: "noopener noreferrer", "data-testid": "elicitation-url" }, params.url)
        : el("code", { "data-testid": "elicitation-url-refused" }, `${params.url} (not an http(s) address: not a link)`)),
      el("div", { class: "buttons" },
        el("button", { class: "primary", "data-testid": "accept", onclick: () => send({ result: { action: "accept" } }) }, "Accept (opened)"),
        el("button", { "data-testid": "decline", onclick: () => send({ result: { action: "decline" } }) }, "Decline"),
        el("button", { "data-testid": "cancel-question", onclick: () => send({ result: { action: "cancel" } }) }, "Cancel")));
  } else if (q.method === "elicitation/create") {
    const form = formEditor(q.form || [], {});
    body = el("div", {}, el("p", { "data-testid": "question-message" }, params.message || ""), form.node,
      el("div", { class: "buttons" },
        el("button", { class: "primary", "data-testid": "accept", onclick: () => { let content; try { content = form.get(); } catch (e) { problem(out, e); return; } send({ result: { action: "accept", content } }); } }, "Accept"),
        el("button", { "data-testid": "decline", onclick: () => send({ result: { action: "decline" } }) }, "Decline"),
        el("button", { "data-testid": "cancel-question", onclick: () => send({ result: { action: "cancel" } }) }, "Cancel")));
  } else if (q.method === "sampling/createMessage") {
    const messages = (params.messages || []).map((m) => el("div", { class: "block" }, el("b", {}, m.role), contentBlock(m.content)));
    const answer = el("textarea", { class: "json", "data-testid": "sampling-answer" }, pretty(q.suggested));
    const parsed = () => { try { return JSON.parse(answer.value); } catch (e) { problem(out, new Error(`not JSON: ${e.message}`)); return undefined; } };
    body = el("div", {},
      params.systemPrompt ? el("p", { class: "muted" }, `system: ${params.systemPrompt}`) : null, messages,
      el("p", { class: "muted" }, `maxTokens ${params.maxTokens}${params.modelPreferences ? ` · preferences ${JSON.stringify(params.modelPreferences)}` : ""}. Your answer, as the model:`),
      answer,
      el("div", { class: "buttons" },
        el("button", { class: "primary", "data-testid": "send-answer", onclick: () => { const r = parsed(); if (r !== undefined) send({ result: r }); } }, "Send this answer"),
        el("button", { "data-testid": "reject", onclick: () => send({ error: { code: -1, message: "User rejected sampling request" } }) }, "Reject")));
  } else {
    const answer = el("textarea", { class: "json", "data-testid": "generic-answer" }, "{}");
    body = el("div", {}, el("div", { class: "tree" }, tree(params)), answer,
      el("div", { class: "buttons" },
        el("button", { class: "primary", onclick: () => { try { send({ result: JSON.parse(answer.value) }); } catch (e) { problem(out, e); } } }, "Send result"),
        el("button", { onclick: () => send({ error: { code: -32601, message: `Method not found: ${q.method}` } }) }, "Refuse")));
  }
  box.append(el("h2", {}, `The server asks: ${q.method}`, q.tool ? el("span", { class: "muted" }, ` (during ${q.tool})`) : null), body, out);
  S.ui.questions.append(box);
  box.scrollIntoView({ block: "nearest" });
}

function renderAnswered() {
  const count = S.ui.tabs && S.ui.tabs.querySelector("[data-count=answers]");
  if (count) count.textContent = String(S.answered.length);
  const list = $("[data-testid=answered]");
  if (list) fill(list, answeredRows());
}

function answeredRows() {
  return S.answered.slice().reverse().map((a) => el("tr", { "data-by": a.by },
    el("td", { class: "mono" }, a.method), el("td", {}, a.by),
    el("td", { class: "wrap mono" }, JSON.stringify(a.error || a.result).slice(0, 300))));
}

function answersPane() {
  const sampling = el("select", { "data-testid": "rule-sampling" }, [["", "ask me"], ["auto", "auto (a canned answer)"], ["reject", "reject"], ["json", "this JSON template:"]].map(([v, t]) => el("option", { value: v }, t)));
  const samplingJson = el("textarea", { class: "json", "data-testid": "rule-sampling-json", placeholder: '{"role": "assistant", "content": {"type": "text", "text": "…"}, "model": "canned"}' });
  const elicitation = el("select", { "data-testid": "rule-elicitation" }, [["", "ask me"], ["auto", "auto (accept with defaults)"], ["decline", "decline"], ["cancel", "cancel"], ["json", "this JSON template:"]].map(([v, t]) => el("option", { value: v }, t)));
  const elicitationJson = el("textarea", { class: "json", "data-testid": "rule-elicitation-json", placeholder: '{"action": "accept", "content": {…}}' });
  const saved = S.rules || {};
  sampling.value = saved.samplingChoice || ""; samplingJson.value = saved.samplingJson || "";
  elicitation.value = saved.elicitationChoice || ""; elicitationJson.value = saved.elicitationJson || "";
  const ask = el("input", { type: "checkbox", "data-testid": "ask" });
  ask.checked = saved.ask !== false;
  const said = el("div");
  const apply = el("button", { class: "primary", "data-testid": "apply-rules" }, "Apply");
  apply.addEventListener("click", async () => {
    const value = (choice, json) => (choice === "json" ? json.value : choice) || null;
    try {
      await post("rules", { conn: S.conn, sampling: value(sampling.value, samplingJson), elicitation: value(elicitation.value, elicitationJson), ask: ask.checked });
      S.rules = { samplingChoice: sampling.value, samplingJson: samplingJson.value, elicitationChoice: elicitation.value, elicitationJson: elicitationJson.value, ask: ask.checked };
      fill(said, el("span", { class: "muted", "data-testid": "rules-applied" }, "applied"));
    } catch (error) { problem(said, error); }
  });
  const roots = el("textarea", { class: "json", "data-testid": "roots" }, (S.roots || S.about.roots || []).map((r) => (r.name ? `${r.uri}=${r.name}` : r.uri)).join("\n"));
  const rootsSaid = el("div");
  const setRoots = el("button", { "data-testid": "apply-roots" }, "Set roots (the server is told)");
  setRoots.addEventListener("click", async () => {
    try {
      const answer = await post("roots", { conn: S.conn, roots: roots.value.split("\n").map((l) => l.trim()).filter(Boolean) });
      S.roots = answer.roots;
      fill(rootsSaid, el("span", { class: "muted" }, `${answer.roots.length} root(s) set`));
    } catch (error) { problem(rootsSaid, error); }
  });
  fill(S.ui.pane, el("div", { class: "split" },
    el("div", { class: "panel" }, el("h2", { style: "margin-top:0" }, "Who answers the server's requests"),
      el("p", { class: "muted" }, "Rules answer first (these, then mcptape ui's --handle-* and --inject), then you, in this page. Without a rule and with \"ask me\" off, a request is declined as mcptape call declines it."),
      el("div", { class: "field" }, el("b", {}, "sampling/createMessage "), sampling, samplingJson),
      el("div", { class: "field" }, el("b", {}, "elicitation/create "), elicitation, elicitationJson),
      el("label", {}, ask, " ask me what no rule answers"), el("div", { class: "toolbar", style: "margin-top:6px" }, apply, said),
      el("h2", {}, "Roots (roots/list)"), el("p", { class: "muted" }, "One per line: URI or URI=NAME (an absolute path becomes file://)."), roots,
      el("div", { class: "toolbar", style: "margin-top:6px" }, setRoots, rootsSaid)),
    el("div", { class: "panel" }, el("h2", { style: "margin-top:0" }, "Answered so far"),
      el("table", { class: "grid" }, el("thead", {}, el("tr", {}, el("th", {}, "method"), el("th", {}, "by"), el("th", {}, "answer"))),
        el("tbody", { "data-testid": "answered" }, answeredRows())))));
}

// -- logs and traffic -----------------------------------------------------------------------------

function logLine(d) {
  const data = typeof d.data === "string" ? d.data : JSON.stringify(d.data);
  return el("div", { class: `lv-${d.level}` }, `${d.level.padEnd(9)} ${d.logger ? `${d.logger}: ` : ""}${data}`);
}

function appendLog(d) {
  const box = $("[data-testid=logs]");
  if (box) { box.append(logLine(d)); box.scrollTop = box.scrollHeight; }
  const count = S.ui.tabs && S.ui.tabs.querySelector("[data-count=logs]");
  if (count) count.textContent = String(S.logs.length);
}

function logsPane() {
  const canLog = (S.hello.capabilities || {}).logging !== undefined;
  const level = el("select", { "data-testid": "log-level", disabled: !canLog }, LEVELS.map((l) => el("option", { value: l }, l)));
  const out = el("div");
  level.addEventListener("change", () => operation("logging/setLevel", { level: level.value }, out));
  fill(S.ui.pane, el("div", {},
    el("div", { class: "toolbar" }, "Send log messages from level ", level, canLog ? null : el("span", { class: "muted" }, "(the server does not advertise logging)"), out),
    el("div", { class: "log panel", "data-testid": "logs" }, S.logs.map(logLine))));
}

function trafficLine(d) {
  return el("div", { class: d.dir }, `${d.dir === "c2s" ? "→" : "←"} ${d.size} B  ${d.text}${d.cut ? " …" : ""}`);
}

function appendTraffic(d) {
  const box = $("[data-testid=traffic]");
  if (box) { box.append(trafficLine(d)); while (box.childNodes.length > TRAFFIC_KEPT) box.firstChild.remove(); box.scrollTop = box.scrollHeight; }
}

function trafficPane() {
  fill(S.ui.pane, el("div", {}, el("p", { class: "muted" }, "Every frame as the client sent (→) and received (←) it; the whole session is in the viewer."),
    el("div", { class: "log traffic panel", "data-testid": "traffic" }, S.traffic.map(trafficLine))));
}

// -- edit and resend -------------------------------------------------------------------------------

function resendPanel() {
  const r = S.resend;
  return el("div", { class: "panel", "data-testid": "resend" },
    el("h2", { style: "margin-top:0" }, `Edit and resend #${r.seq} ${r.method}`),
    el("p", { class: "muted" }, `from session ${r.sessionName || ""} ${r.sessionId.slice(0, 12)} (${r.upstream || "?"})`));
}

function openResend() {
  const r = S.resend;
  const slot = $("[data-testid=resend-slot]");
  const out = el("div", { "data-testid": "resend-output" });
  const compared = el("div", { class: "compare-result", "data-testid": "comparison" });
  let editor;
  if (r.method === "tools/call") {
    const list = S.lists.tools || { items: [], forms: [] };
    const at = list.items.findIndex((t) => t.name === r.params.name);
    editor = argumentsEditor(at >= 0 ? list.forms[at] : [], r.params.arguments || {});
    if (at < 0) editor.showRaw();
  } else {
    editor = argumentsEditor([], r.params);
    editor.showRaw();
  }
  const send = el("button", { class: "primary", "data-testid": "resend-send" }, "Send");
  send.addEventListener("click", () => {
    let values;
    try { values = editor.get(); } catch (error) { problem(out, error); return; }
    const params = r.method === "tools/call" ? { ...r.params, arguments: values } : values;
    fill(compared);
    operation(r.method, params, out, {
      onResult: async (outcome) => {
        const answer = outcome.error ? { error: { code: outcome.error.code, message: outcome.error.message, data: outcome.error.data } } : { result: outcome.result };
        try {
          const c = await post("compare", { session: r.sessionId, seq: r.seq, answer });
          fill(compared, el("p", {}, "Against the recorded answer: ", el("span", { class: c.status === "match" ? "match" : "differs", "data-testid": "compare-status" }, c.status)),
            c.differences.length ? el("table", { class: "grid", "data-testid": "differences" },
              el("thead", {}, el("tr", {}, el("th", {}, "where"), el("th", {}, "recorded"), el("th", {}, "now"))),
              el("tbody", {}, c.differences.map((d) => el("tr", {}, el("td", { class: "mono" }, d.pointer), el("td", { class: "mono wrap" }, JSON.stringify(d.recorded)), el("td", { class: "mono wrap" }, JSON.stringify(d.now)))))) : null);
        } catch (error) { problem(compared, error); }
      },
    });
  });
  fill(slot, resendPanel());
  slot.firstChild.append(
    r.method === "tools/call" ? el("p", {}, "tool ", el("b", { class: "mono" }, r.params.name)) : null,
    editor.node, el("div", { class: "toolbar", style: "margin-top:8px" }, send), out,
    el("details", { open: true }, el("summary", {}, "the recorded answer"), el("pre", { "data-testid": "recorded-answer" }, pretty(r.recorded))), compared);
}

login().then(start, (error) => problem(root, error));
