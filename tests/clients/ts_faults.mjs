// The reference TypeScript MCP client (@modelcontextprotocol/sdk in tests/npm) under injected
// faults: what it does when mcptape delays, drops, duplicates, breaks or cuts what it waits for.
//   node tests/clients/ts_faults.mjs RUNS_JSON
// RUNS_JSON: a list of {"plan": {"calls": [{"name", "arguments", "progress": bool}, ...],
// "timeoutMs": N}, "target": ["stdio", COMMAND, ARGS...] or ["http", URL, TOKEN?]}. The runs go
// at once (one Node process, so the SDK loads once), each on its own connection; within a run
// the calls are made in turn with the SDK's own request timeout. Prints one JSON list, a document
// per run: per call its outcome ("result", "error" with code and message) and how long it took,
// the order in which progress and the result arrived, what the SDK reported through onerror,
// and whether the transport closed (onclose).
const sdk = (rel) => import(new URL(`../npm/node_modules/@modelcontextprotocol/sdk/dist/esm/${rel}`, import.meta.url).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

function transportFor([kind, target, ...rest]) {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, stderr: "ignore", env: process.env });
  }
  if (kind === "http") {
    const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
    return new StreamableHTTPClientTransport(new URL(target), {
      requestInit: { headers },
      // Resumption is the SDK's answer to an ended stream: a few quick retries, not minutes of them.
      reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 2 },
    });
  }
  throw new Error(`unknown transport ${kind}: stdio or http`);
}

async function oneCall(client, call, plan) {
  const events = [];
  const started = Date.now();
  const entry = { name: call.name };
  try {
    const options = { timeout: plan.timeoutMs };
    if (call.progress) options.onprogress = (p) => events.push(`progress ${p.progress}`);
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, options);
    events.push("result");
    entry.outcome = result.isError ? "tool error" : "result";
    entry.text = (result.content ?? []).map((c) => c.text ?? "").join("").slice(0, 200);
  } catch (error) {
    entry.outcome = "error";
    entry.code = error?.code ?? null;
    entry.message = String(error?.message ?? error).slice(0, 200);
  }
  entry.ms = Date.now() - started;
  // Late arrivals (a progress after its result) are reported through onerror: give them a moment.
  await new Promise((resolve) => setTimeout(resolve, plan.settleMs ?? 300));
  entry.events = events;
  return entry;
}

async function run({ plan, target }) {
  const out = { calls: [], errors: [], closed: false };
  try {
    const client = new Client({ name: "ts-faults", version: "1.0.0" }, { capabilities: {} });
    let closing = false; // what the SDK says while it closes (aborted streams) is not about the fault
    client.onerror = (error) => { if (!closing) out.errors.push(String(error?.message ?? error).slice(0, 200)); };
    client.onclose = () => { out.closed = true; };
    await client.connect(transportFor(target));
    for (const call of plan.calls) out.calls.push(await oneCall(client, call, plan));
    closing = true;
    await client.close();
  } catch (error) {
    out.ended_by = String(error?.message ?? error).slice(0, 200);
  }
  return out;
}

const runs = JSON.parse(process.argv[2]);
const results = await Promise.all(runs.map(run));
process.stdout.write(JSON.stringify(results) + "\n");
process.exit(0);
