// A minimal one-shot MCP client with the TypeScript SDK: connect over stdio, tools/list, close.
// The baseline bench_call.py measures `mcptape call` against, run as:
//   node bench/oneshot_client.mjs SDK_DIR COMMAND [ARGS...]
// SDK_DIR is the installed @modelcontextprotocol/sdk (tests/npm/node_modules/@modelcontextprotocol/sdk);
// it is imported by path because bench/ has no node_modules of its own.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, command, ...args] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(sdkDir, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "bench-oneshot", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
const result = await client.listTools();
process.stdout.write(JSON.stringify(result) + "\n");
await client.close();
