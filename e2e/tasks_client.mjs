#!/usr/bin/env node
// tasks_client.mjs — an MCP *tasks* client (2025-11-25 era, SEP-1686) built on the
// official TypeScript SDK, for Switchboard's end-to-end tests.
//
// The gateway's e2e tests run it THROUGH the gateway (Streamable HTTP) to check that
// task-augmented `tools/call`, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`,
// `notifications/tasks/status` and a task's side-channel elicitation (delivered while
// `tasks/result` is pending) are relayed faithfully. It can also be pointed straight at an
// upstream over stdio, e.g. the npm "everything" server, to see what the real thing does:
//
//   node e2e/tasks_client.mjs research --stdio node e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
//   node e2e/tasks_client.mjs research --url http://127.0.0.1:PORT/mcp --header 'Authorization: Bearer X'
//
// Modes (first positional argument, or --mode):
//   research  call --tool (default simulate-research-query) with --args (default {"topic":"tasks"})
//             as a task (`task: {ttl}`), poll `tasks/get` every --poll ms (default 200), listen
//             for `notifications/tasks/status`, call `tasks/result` once the task is
//             input_required or completed; exit 0 only if the task completed.
//   list      print the `tasks/list` result (with --create, first create one task in this session).
//   cancel    create the task, wait --cancel-after ms (default 500), `tasks/cancel` it, print the
//             cancel result and the status `tasks/get` reports afterwards; exit 0 if it is cancelled.
//
// Output: one JSON object per line on stdout, each with an "event" field:
//   {"event":"created","taskId","status","task"}            the CreateTaskResult's task
//   {"event":"status","source":"poll"|"notification","status","statusMessage"}
//                                                           (printed when it differs from the
//                                                           previous one from the same source)
//   {"event":"elicitation","message","requestedSchema","relatedTask","response"}
//   {"event":"result","result"}                             what tasks/result returned
//   {"event":"list","result"} / {"event":"cancel","result"} / {"event":"stream",...} (--sdk-stream)
// Errors go to stderr; the exit status is non-zero (1: the task did not complete / a request
// failed, 2: bad usage).
//
// Other options:
//   --header 'Name: value'   extra HTTP header (repeatable), HTTP only
//   --ttl MS                 task TTL requested (default 60000)
//   --timeout MS             give up after this long (default 60000)
//   --trace                  log every raw JSON-RPC message to stderr as {"trace":"send"|"recv","msg":…}
//                            (over HTTP also which HTTP exchange / SSE stream carried what)
//   --sdk-stream             research via the SDK's client.experimental.tasks.callToolStream
//                            instead (it polls at the server's pollInterval and, once the task is
//                            input_required, only waits on tasks/result: fewer status events)
//
// Modules: the SDK is imported with bare specifiers, so Node resolves it from the
// node_modules next to this script (e2e/node_modules, made by scripts/install-test-deps.sh).
// Set E2E_NODE_MODULES=/path/to/node_modules to load it from elsewhere.

import path from 'node:path';
import { pathToFileURL } from 'node:url';

// ---------------------------------------------------------------------------------------
// SDK loading

async function sdk(subpath) {
  const dir = process.env.E2E_NODE_MODULES;
  if (dir) {
    // Bypass the package's exports map: load the ESM file directly.
    const file = path.join(dir, '@modelcontextprotocol/sdk/dist/esm', subpath.endsWith('.js') ? subpath : `${subpath}/index.js`);
    return import(pathToFileURL(file).href);
  }
  return import(`@modelcontextprotocol/sdk/${subpath}`).catch((e) => {
    process.stderr.write(
      `tasks_client: cannot load @modelcontextprotocol/sdk (${e.code ?? e.message}); run ` +
        'scripts/install-test-deps.sh (or link e2e/node_modules), or set E2E_NODE_MODULES\n',
    );
    process.exit(2);
  });
}

const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  TaskStatusNotificationSchema,
  RELATED_TASK_META_KEY,
} = await sdk('types.js');
const { InMemoryTaskStore } = await sdk('experimental/tasks');

// ---------------------------------------------------------------------------------------
// Arguments

function usage(msg) {
  if (msg) process.stderr.write(`tasks_client: ${msg}\n`);
  process.stderr.write(
    'usage: node tasks_client.mjs [research|list|cancel] (--url URL [--header "K: V"]... | --stdio CMD ARGS...)\n' +
      '       [--tool NAME] [--args JSON] [--ttl MS] [--poll MS] [--timeout MS] [--cancel-after MS]\n' +
      '       [--create] [--sdk-stream] [--trace]\n' +
      '(--stdio takes every remaining argument as the command line, so put it last)\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    mode: undefined,
    url: undefined,
    headers: {},
    stdio: undefined,
    tool: 'simulate-research-query',
    args: { topic: 'tasks' },
    ttl: 60000,
    poll: 200,
    timeout: 60000,
    cancelAfter: 500,
    create: false,
    sdkStream: false,
    trace: false,
  };
  const num = (v, name) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) usage(`${name} wants a number, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} wants a value`);
      return argv[++i];
    };
    switch (a) {
      case '--url': o.url = val(); break;
      case '--header': {
        const h = val();
        const c = h.indexOf(':');
        if (c <= 0) usage(`--header wants "Name: value", got ${h}`);
        o.headers[h.slice(0, c).trim()] = h.slice(c + 1).trim();
        break;
      }
      case '--stdio':
        o.stdio = argv.slice(i + 1);
        if (o.stdio.length === 0) usage('--stdio wants a command');
        i = argv.length;
        break;
      case '--mode': o.mode = val(); break;
      case '--tool': o.tool = val(); break;
      case '--args':
        try { o.args = JSON.parse(val()); } catch (e) { usage(`--args is not JSON: ${e.message}`); }
        break;
      case '--ttl': o.ttl = num(val(), a); break;
      case '--poll': o.poll = num(val(), a); break;
      case '--timeout': o.timeout = num(val(), a); break;
      case '--cancel-after': o.cancelAfter = num(val(), a); break;
      case '--create': o.create = true; break;
      case '--sdk-stream': o.sdkStream = true; break;
      case '--trace': o.trace = true; break;
      case '-h': case '--help': usage(); break;
      default:
        if (a.startsWith('-') || o.mode !== undefined) usage(`unexpected argument ${a}`);
        o.mode = a;
    }
  }
  o.mode ??= 'research';
  if (!['research', 'list', 'cancel'].includes(o.mode)) usage(`unknown mode ${o.mode}`);
  if (!o.url === !o.stdio) usage('give exactly one of --url and --stdio');
  return o;
}

const opts = parseArgs(process.argv.slice(2));

// ---------------------------------------------------------------------------------------
// Output helpers

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const fail = (msg) => {
  process.stderr.write(`tasks_client: ${msg}\n`);
  process.exitCode = 1;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// ---------------------------------------------------------------------------------------
// Transport (optionally wrapped to trace the raw JSON-RPC traffic)

function makeTransport() {
  if (opts.url) {
    return new StreamableHTTPClientTransport(new URL(opts.url), {
      requestInit: { headers: opts.headers },
      ...(opts.trace ? { fetch: tracedFetch } : {}),
    });
  }
  const [command, ...args] = opts.stdio;
  return new StdioClientTransport({ command, args, stderr: 'inherit' });
}

// With --trace over HTTP: which HTTP exchange carried which message. Each request gets a
// number; {"trace":"http",…} says what was sent and how it was answered, and every SSE event
// of a text/event-stream answer (a POST's stream or the standalone GET stream) is logged as
// {"trace":"sse","http":N,"data":…}.
let httpSeq = 0;
async function tracedFetch(url, init = {}) {
  const n = ++httpSeq;
  const log = (o) => process.stderr.write(JSON.stringify({ trace: 'http', http: n, ...o }) + '\n');
  let body;
  try { body = init.body ? JSON.parse(init.body) : undefined; } catch { body = init.body; }
  const rpc = (m) => (m && typeof m === 'object' ? { method: m.method, id: m.id } : m);
  log({ send: init.method ?? 'GET', rpc: Array.isArray(body) ? body.map(rpc) : rpc(body) });
  const res = await fetch(url, init);
  const type = res.headers.get('content-type') ?? '';
  log({ status: res.status, contentType: type, session: res.headers.get('mcp-session-id') });
  if (!type.includes('text/event-stream') || !res.body) return res;
  const [mine, theirs] = res.body.tee();
  (async () => {
    const dec = new TextDecoder();
    let buf = '';
    for await (const chunk of mine) {
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
        if (!data) continue;
        let msg;
        try { msg = JSON.parse(data); } catch { msg = data; }
        process.stderr.write(JSON.stringify({ trace: 'sse', http: n, data: rpc(msg) }) + '\n');
      }
    }
  })().catch(() => {});
  return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function traced(transport) {
  const log = (dir, msg) => process.stderr.write(JSON.stringify({ trace: dir, msg }) + '\n');
  const send = transport.send.bind(transport);
  transport.send = (msg, o) => {
    log('send', msg);
    return send(msg, o);
  };
  // Client.connect sets onmessage on the transport after we return; intercept the setter.
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler,
    set: (h) => {
      handler = h && ((msg, extra) => {
        log('recv', msg);
        return h(msg, extra);
      });
    },
  });
  return transport;
}

// ---------------------------------------------------------------------------------------
// Client

// First option of a JSON Schema property, for answering a form elicitation unattended.
function pick(prop) {
  if (!prop || typeof prop !== 'object') return 'technical';
  if (Array.isArray(prop.enum) && prop.enum.length) return prop.enum[0];
  for (const k of ['oneOf', 'anyOf']) {
    const first = Array.isArray(prop[k]) ? prop[k].find((x) => x && 'const' in x) : undefined;
    if (first) return first.const;
  }
  if ('default' in prop) return prop.default;
  switch (prop.type) {
    case 'number': case 'integer': return 0;
    case 'boolean': return true;
    default: return 'technical';
  }
}

const client = new Client(
  { name: 'switchboard-e2e-tasks-client', version: '0.1.0' },
  {
    capabilities: {
      // Form elicitation: the everything server registers its research tool's clarifying
      // question only for clients declaring this at initialize.
      elicitation: { form: {} },
      // Client-side task support (the receiver side of tasks/get|list|cancel, served by the
      // SDK from taskStore). Task-augmented *elicitation* (tasks.requests.elicitation.create)
      // is deliberately not declared: elicitations are answered inline.
      tasks: { list: {}, cancel: {} },
    },
    taskStore: new InMemoryTaskStore(),
  },
);

client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const p = request.params;
  const props = p.requestedSchema?.properties ?? {};
  const content = {};
  for (const [k, v] of Object.entries(props)) content[k] = pick(v);
  if (!('interpretation' in content) && Object.keys(content).length === 0) content.interpretation = 'technical';
  const response = { action: 'accept', content };
  emit({
    event: 'elicitation',
    message: p.message,
    requestedSchema: p.requestedSchema,
    relatedTask: p._meta?.[RELATED_TASK_META_KEY] ?? null,
    response,
  });
  return response;
});

// Status notifications, filtered to the task(s) we created.
const ourTasks = new Set();
const lastSeen = { poll: undefined, notification: undefined };
function status(source, task) {
  const key = `${task.status}\u0000${task.statusMessage ?? ''}`;
  if (lastSeen[source] === key) return;
  lastSeen[source] = key;
  emit({ event: 'status', source, taskId: task.taskId, status: task.status, statusMessage: task.statusMessage ?? null });
}
const notified = []; // resolvers waiting for the next notification
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  if (ourTasks.size && !ourTasks.has(n.params.taskId)) return;
  status('notification', n.params);
  notified.splice(0).forEach((r) => r());
});

async function createTask() {
  const created = await client.request(
    { method: 'tools/call', params: { name: opts.tool, arguments: opts.args } },
    CreateTaskResultSchema,
    { task: { ttl: opts.ttl }, timeout: opts.timeout },
  );
  const task = created.task;
  ourTasks.add(task.taskId);
  emit({ event: 'created', taskId: task.taskId, status: task.status, task });
  return task;
}

// ---------------------------------------------------------------------------------------
// Modes

async function research() {
  if (opts.sdkStream) return researchSdkStream();
  const task = await createTask();
  const id = task.taskId;
  const reqOpts = { timeout: opts.timeout };

  // tasks/result blocks until the task is terminal and is also the channel on which the
  // server delivers queued side requests (elicitation) of an input_required task, so it is
  // started as soon as the task needs input (or is done), and the polling carries on meanwhile.
  let resultP;
  const startResult = () => {
    resultP ??= client.experimental.tasks.getTaskResult(id, CallToolResultSchema, reqOpts).then(
      (result) => ({ result }),
      (error) => ({ error }),
    );
  };

  let final = task.status;
  if (final === 'input_required' || final === 'completed') startResult();
  const deadline = Date.now() + opts.timeout;
  while (!TERMINAL.has(final)) {
    if (Date.now() > deadline) {
      fail(`task ${id} still ${final} after ${opts.timeout} ms`);
      return;
    }
    await sleep(opts.poll);
    let t;
    try {
      t = await client.experimental.tasks.getTask(id, reqOpts);
    } catch (e) {
      fail(`tasks/get failed: ${e.message}`);
      return;
    }
    status('poll', t);
    final = t.status;
    if (final === 'input_required' || final === 'completed') startResult();
  }
  if (final !== 'completed') {
    fail(`task ${id} ended ${final}`);
    return;
  }
  const r = await resultP;
  if (r.error) {
    fail(`tasks/result failed: ${r.error.message}`);
    return;
  }
  // Give a trailing status notification a moment to arrive (it is sent just before the
  // server answers tasks/result, but over HTTP it may travel on another stream).
  await Promise.race([sleep(100), new Promise((res) => notified.push(res))]);
  emit({ event: 'result', result: r.result });
  if (r.result.isError) fail('the tool result has isError: true');
}

async function researchSdkStream() {
  const stream = client.experimental.tasks.callToolStream(
    { name: opts.tool, arguments: opts.args },
    CallToolResultSchema,
    { task: { ttl: opts.ttl }, timeout: opts.timeout },
  );
  let ok = false;
  for await (const m of stream) {
    switch (m.type) {
      case 'taskCreated':
        ourTasks.add(m.task.taskId);
        emit({ event: 'created', taskId: m.task.taskId, status: m.task.status, task: m.task });
        break;
      case 'taskStatus':
        status('poll', m.task);
        break;
      case 'result':
        emit({ event: 'result', result: m.result });
        ok = !m.result.isError;
        if (!ok) fail('the tool result has isError: true');
        break;
      case 'error':
        fail(`callToolStream: ${m.error.message}`);
        break;
      default:
        emit({ event: 'stream', message: m });
    }
  }
  if (!ok && !process.exitCode) fail('callToolStream ended without a result');
}

async function list() {
  if (opts.create) await createTask();
  const result = await client.experimental.tasks.listTasks(undefined, { timeout: opts.timeout });
  emit({ event: 'list', result });
}

async function cancel() {
  const task = await createTask();
  await sleep(opts.cancelAfter);
  const result = await client.experimental.tasks.cancelTask(task.taskId, { timeout: opts.timeout });
  emit({ event: 'cancel', result });
  await sleep(opts.poll);
  const t = await client.experimental.tasks.getTask(task.taskId, { timeout: opts.timeout });
  status('poll', t);
  if (t.status !== 'cancelled') fail(`task ${task.taskId} is ${t.status} after tasks/cancel`);
}

// ---------------------------------------------------------------------------------------
// Main

const transport = makeTransport();
const watchdog = setTimeout(() => {
  fail(`timed out after ${opts.timeout + 10000} ms`);
  process.exit(1);
}, opts.timeout + 10000);
try {
  await client.connect(opts.trace ? traced(transport) : transport);
  await { research, list, cancel }[opts.mode]();
} catch (e) {
  // An MCP error (it has a numeric code) is the peer's answer: its message says it all.
  fail(typeof e?.code === 'number' ? e.message : (e?.stack ?? String(e)));
} finally {
  clearTimeout(watchdog);
  // Nothing more to report: closing a stdio child can take a moment, during which it may
  // still send status notifications.
  client.removeNotificationHandler('notifications/tasks/status');
  await client.close().catch(() => {});
}
process.exit(process.exitCode ?? 0);
