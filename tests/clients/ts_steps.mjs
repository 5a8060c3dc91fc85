// The reference TypeScript MCP client (@modelcontextprotocol/sdk in tests/npm) running a list of
// steps, for interoperability tests: what a client nobody here wrote sees through mcptape.
//   node tests/clients/ts_steps.mjs STEPS_JSON stdio COMMAND [ARGS...]
//   node tests/clients/ts_steps.mjs STEPS_JSON http|sse URL [TOKEN]
// STEPS_JSON is a JSON array of {"m": a Client method (callTool, listTools, ping, ...), "p": its
// params, "abortAfterMs": cancel it after N ms (the SDK sends notifications/cancelled),
// "progress": true (ask for progress), "sleepMs": wait after it, "timeoutMs"}; a step
// {"m": "terminateSession"} sends the HTTP DELETE. Its roots are $TS_STEPS_ROOTS (URIs, comma
// separated; file:///tmp by default). Prints one JSON document: the server's info,
// each step's result or error, the server requests the handlers answered and the notifications.
const sdk = (rel) => import(new URL(`../npm/node_modules/@modelcontextprotocol/sdk/dist/esm/${rel}`, import.meta.url).href);
const { Client } = await sdk("client/index.js");
const T = await sdk("types.js");

const [stepsJson, kind, target, ...rest] = process.argv.slice(2);
const steps = JSON.parse(stepsJson);
const headers = kind !== "stdio" && rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
let transport;
if (kind === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "ignore", env: process.env });
} else if (kind === "http") {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else if (kind === "sse") {
  const { SSEClientTransport } = await sdk("client/sse.js");
  const withHeaders = (url, init) => fetch(url, { ...init, headers: { ...(init?.headers ?? {}), ...headers } });
  transport = new SSEClientTransport(new URL(target), { requestInit: { headers }, eventSourceInit: { fetch: withHeaders } });
} else {
  throw new Error(`unknown transport ${kind}: stdio, http or sse`);
}

const client = new Client(
  { name: "ts-steps", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
);
const asked = [];
const notifications = [];
client.setRequestHandler(T.CreateMessageRequestSchema, async (request) => {
  asked.push(request.method);
  return { role: "assistant", content: { type: "text", text: "canned from typescript" }, model: "ts-model" };
});
client.setRequestHandler(T.ElicitRequestSchema, async (request) => {
  asked.push(request.method);
  return { action: "accept", content: { color: "green" } };
});
client.setRequestHandler(T.ListRootsRequestSchema, async (request) => {
  asked.push(request.method);
  return { roots: (process.env.TS_STEPS_ROOTS ?? "file:///tmp").split(",").map((uri) => ({ uri, name: "root" })) };
});
client.fallbackNotificationHandler = async (notification) => {
  notifications.push(notification.method);
};

await client.connect(transport);
const out = { server: client.getServerVersion(), results: [], asked, notifications };
for (const step of steps) {
  const abort = new AbortController();
  if (step.abortAfterMs !== undefined) setTimeout(() => abort.abort("cancelled by ts_steps"), step.abortAfterMs);
  const progress = [];
  const options = { signal: abort.signal, timeout: step.timeoutMs ?? 30000 };
  if (step.progress) options.onprogress = (p) => progress.push(p.progress);
  try {
    let result;
    if (step.m === "terminateSession") result = await transport.terminateSession();
    else if (step.m === "callTool") result = await client.callTool(step.p, undefined, options);
    else result = await client[step.m](step.p, options);
    out.results.push({ m: step.m, result: result ?? null, progress });
  } catch (error) {
    out.results.push({ m: step.m, error: String(error?.message ?? error), code: error?.code ?? null, progress });
  }
  if (step.sleepMs) await new Promise((resolve) => setTimeout(resolve, step.sleepMs));
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
