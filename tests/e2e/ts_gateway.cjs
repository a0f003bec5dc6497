// A host built on the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in .ci/e2e-deps) that connects to a
// `mcppol gateway --listen` over streamable HTTP, with server-everything,
// server-memory and server-filesystem behind it, and reports what it saw
// as one JSON object on stdout. tests/suite/gateway_sdk_http.rs asserts on
// the report; this script only observes.
//
//     node ts_gateway.cjs CONFIG_JSON
//
// CONFIG_JSON: {"node_modules": DIR (where the SDK is installed), "url":
// URL, "token": TOKEN, "everything_js": PATH, "sandbox": DIR, "elicit":
// WORD, "write_name": NAME}

"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const cfg = JSON.parse(process.argv[2]);
const sdk = createRequire(path.join(cfg.node_modules, "index.js"));
const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = sdk("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { StdioClientTransport } = sdk("@modelcontextprotocol/sdk/client/stdio.js");
const { ElicitRequestSchema } = sdk("@modelcontextprotocol/sdk/types.js");

async function call(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    return { is_error: Boolean(r.isError), content: r.content };
  } catch (e) {
    return { rpc_error: { code: e.code ?? null, message: String(e.message) } };
  }
}

// The same call straight to server-everything over stdio, no gateway.
async function direct(name, args) {
  const client = new Client({ name: "direct", version: "1" });
  await client.connect(new StdioClientTransport({ command: "node", args: [cfg.everything_js, "stdio"], stderr: "ignore" }));
  try {
    return await call(client, name, args);
  } finally {
    await client.close();
  }
}

async function main() {
  const report = {};
  const asked = [];
  const client = new Client({ name: "ts-host", version: "1" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: { decision: cfg.elicit } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(cfg.url), {
    requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } },
  });
  await client.connect(transport);
  report.protocol_version = transport.protocolVersion ?? null;
  report.server_name = client.getServerVersion()?.name ?? null;
  const tools = await client.listTools();
  report.tools = tools.tools.map((t) => t.name);
  report.write_before = await call(client, "memory__create_entities", {
    entities: [{ name: "before", entityType: "note", observations: ["clean"] }],
  });
  const args = { message: "hello from the TypeScript SDK" };
  report.echo = await call(client, "everything__echo", args);
  report.direct_echo = await direct("echo", args);
  // everything's output is in the session's context: the same kind of
  // write is denied, though this client passes no taint.
  report.write_after = await call(client, "memory__create_entities", {
    entities: [{ name: "after", entityType: "note", observations: ["tainted"] }],
  });
  report.hidden = await call(client, "everything__get-env", {});
  // An ask, settled by this client's elicitation handler.
  report.write = await call(client, "fs__write_file", {
    path: path.join(cfg.sandbox, cfg.write_name),
    content: "asked",
  });
  report.asked = asked;
  await transport.terminateSession();
  await client.close();
  process.stdout.write(JSON.stringify(report) + "\n");
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
