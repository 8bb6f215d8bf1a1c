// The reference for `bench/mcp.sh`: the official TypeScript SDK client (the one
// server-everything is built on) doing the same sequential calls as examples/mcp_bench.rs.
// Usage: node bench/mcp_ref_client.mjs N TOOL ARGS_JSON -- COMMAND [ARGS...]
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../.cache/node/package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
const [n, tool, argsJson] = [Number(argv[0] ?? 1000), argv[1] ?? "echo", argv[2] ?? "{}"];
const [command, ...args] = argv.slice(split + 1);
const client = new Client({ name: "ref-bench", version: "0.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
const callArgs = JSON.parse(argsJson);
const started = process.hrtime.bigint();
for (let i = 0; i < n; i++) {
  const r = await client.callTool({ name: tool, arguments: callArgs });
  if (r.isError) { console.error("call failed", JSON.stringify(r)); process.exit(1); }
}
const secs = Number(process.hrtime.bigint() - started) / 1e9;
console.log(`${n} calls in ${secs.toFixed(3)} s: ${Math.round(n / secs)} calls/s`);
await client.close();
