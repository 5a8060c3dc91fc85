// The reference TypeScript MCP client (@modelcontextprotocol/sdk in tests/npm) running one scenario
// against server-everything: tools, a resource, a prompt, and the server's sampling and elicitation
// requests, answered by this client's own handlers. Prints the results as one JSON document.
//   node tests/clients/ts_client.mjs stdio COMMAND [ARGS...]
//   node tests/clients/ts_client.mjs http URL [TOKEN]
// The SDK is imported by path: tests/clients has no node_modules of its own.
const sdk = (rel) => import(new URL(`../npm/node_modules/@modelcontextprotocol/sdk/dist/esm/${rel}`, import.meta.url).href);
const { Client } = await sdk("client/index.js");
const { CreateMessageRequestSchema, ElicitRequestSchema } = await sdk("types.js");

const [kind, target, ...rest] = process.argv.slice(2);
let transport;
if (kind === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
} else if (kind === "http") {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  throw new Error(`unknown transport ${kind}: stdio or http`);
}

const client = new Client(
  { name: "ts-scenario", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: { form: {} } } },
);
const asked = [];
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.push(request.method);
  return { role: "assistant", content: { type: "text", text: "canned from typescript" }, model: "ts-model" };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.method);
  return { action: "accept", content: { color: "green" } };
});

await client.connect(transport);
const out = {
  server: client.getServerVersion()?.name,
  tools: (await client.listTools()).tools.map((t) => t.name).sort(),
  echo: await client.callTool({ name: "echo", arguments: { message: "from typescript" } }),
  sum: await client.callTool({ name: "get-sum", arguments: { a: 4, b: 38 } }),
  read: await client.readResource({ uri: "demo://resource/static/document/architecture.md" }),
  prompt: await client.getPrompt({ name: "args-prompt", arguments: { city: "Lisbon" } }),
  sampling: await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hi", maxTokens: 5 } }),
  elicitation: await client.callTool({ name: "trigger-elicitation-request", arguments: {} }),
  asked,
};
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
