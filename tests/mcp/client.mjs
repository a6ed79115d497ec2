// The official MCP TypeScript SDK client, driven by a plan (a JSON file named
// by argv[2]) from tests/e2e/mcp_client_test.cc:
//   {"transport": "stdio", "command": "build/keet", "args": ["mcp", "--root", DIR]}
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp"}
//   "calls": [{"tool": NAME, "arguments": {...}}, ...]
// Connects (initialize + notifications/initialized), lists the tools, makes
// each call and prints one JSON document on stdout: the negotiated revision,
// the server's info, the declared tools, and per call the result, whether
// the SDK accepted it (it checks structuredContent against the tool's
// outputSchema itself) and an independent Ajv validation of it. The test
// decides what is right; this script only reports. Runs from the folder
// scripts/fetch-mcp-client installed the SDK into (the test copies it there).
import { readFileSync } from 'node:fs';
import Ajv from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function transportFor(p) {
  if (p.transport === 'http') return new StreamableHTTPClientTransport(new URL(p.url));
  return new StdioClientTransport({ command: p.command, args: p.args, stderr: 'pipe' });
}

const transport = transportFor(plan);
// The revision the client settled on at initialize (the HTTP transport keeps
// it for its MCP-Protocol-Version header; stdio has no such hook of its own).
let negotiated = null;
const keepVersion = transport.setProtocolVersion ? transport.setProtocolVersion.bind(transport) : null;
transport.setProtocolVersion = (v) => {
  negotiated = v;
  if (keepVersion) keepVersion(v);
};
let stderr = '';
const client = new Client({ name: 'keet-e2e', version: '1.0.0' });
const out = { calls: [] };
try {
  await client.connect(transport);
  if (transport.stderr) transport.stderr.on('data', (d) => { stderr += d; });
  out.protocolVersion = negotiated;
  out.serverInfo = client.getServerVersion() ?? null;
  out.capabilities = client.getServerCapabilities() ?? null;
  out.sessionId = transport.sessionId ?? null;
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => t.name);
  const ajv = new Ajv({ strict: false, allErrors: true });
  const validators = Object.fromEntries(listed.tools.map((t) => [t.name, ajv.compile(t.outputSchema)]));
  await client.ping();
  out.ping = true;
  for (const call of plan.calls) {
    const entry = { tool: call.tool };
    try {
      const r = await client.callTool({ name: call.tool, arguments: call.arguments });
      entry.isError = r.isError === true;
      entry.text = r.content.map((c) => c.text).join('\n');
      entry.structured = r.structuredContent ?? null;
      entry.sdkAccepted = true;
      if (r.structuredContent && validators[call.tool]) {
        entry.ajvValid = validators[call.tool](r.structuredContent);
        if (!entry.ajvValid) entry.ajvErrors = ajv.errorsText(validators[call.tool].errors);
      }
    } catch (e) {
      entry.sdkAccepted = false;
      entry.error = String(e && e.message ? e.message : e);
      entry.code = e && e.code !== undefined ? e.code : null;
    }
    out.calls.push(entry);
  }
  if (plan.transport === 'http' && transport.terminateSession) {
    await transport.terminateSession();
    out.terminated = true;
  }
  await client.close();
} catch (e) {
  out.fatal = String(e && e.stack ? e.stack : e) + (e && e.cause ? ` (cause: ${e.cause})` : '');
}
out.stderr = stderr;
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(out.fatal ? 1 : 0);
