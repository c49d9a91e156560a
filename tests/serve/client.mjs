// The client side of tests/test_serve.c: talks to `pocketflash serve` at BASE_URL and writes what
// it saw as JSON to OUT; the C test judges it. Modes:
//   sdk IN OUT [CONCURRENCY]  IN: [{endpoint: "chat"|"completions", body, key?}] through the
//                             official OpenAI Node SDK (stream or not per body.stream); OUT: one
//                             result per request, in IN's order
//   raw IN OUT                IN: [{method, path, headers?, body?}] with fetch; OUT: [{status, body}]
//   load OUT N CLIENTS PID    N small chat requests from CLIENTS concurrent clients (SDK) over a
//                             few prompts whose answers are first fetched one at a time; every
//                             answer must equal its prompt's; the server's RSS (/proc/PID) sampled
//   disconnect OUT            a stream dropped after its first chunks, then a request that must
//                             get the (only) session
//   turns OUT                 two conversations, one turn each, then each one's second turn
//   vanish OUT N              N long streams at once, each dropped after its first chunks, beside
//                             one short request; then /health
//   burst IN OUT CONCURRENCY  as sdk, OUT {wall_ms, results}: the whole run's time (streamed
//                             results carry ttft_ms, their first text's time)
// PF_OPENAI_DIR names the folder the SDK was installed into (mk/serve.mk).
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';

const [base, mode, ...args] = process.argv.slice(2);

function sdk(key) {
  const require = createRequire(`${process.env.PF_OPENAI_DIR}/package.json`);
  const mod = require('openai');
  const OpenAI = mod.default ?? mod.OpenAI ?? mod;
  return new OpenAI({ baseURL: `${base}/v1`, apiKey: key ?? 'none', maxRetries: 0, timeout: 300000 });
}

async function one(client, { endpoint, body }) {
  const t0 = performance.now();
  try {
    const api = endpoint === 'chat' ? client.chat.completions : client.completions;
    if (!body.stream) {
      const r = await api.create(body);
      const c = r.choices[0];
      return { ok: true, text: endpoint === 'chat' ? c.message.content : c.text, finish_reason: c.finish_reason,
               tool_calls: endpoint === 'chat' ? (c.message.tool_calls ?? null) : null,
               usage: r.usage, pocketflash: r.pocketflash, object: r.object, ms: performance.now() - t0 };
    }
    const stream = await api.create(body);
    let text = '', chunks = 0, finish_reason = null, usage = null, pocketflash = null, role = null;
    // delta.tool_calls gathered by index, as OpenAI streams them: the first delta of a call
    // carries its id, type and name, the later ones pieces of its arguments
    const calls = [];
    let calls_in_order = true;
    const marks = { text: '', tokens: 0, drafted: 0 }; // the pocketflash.tokens extension
    let ttft_ms = null;
    for await (const ch of stream) {
      chunks++;
      for (const t of ch.pocketflash?.tokens ?? []) {
        marks.text += t.text;
        if (!t.cont) { marks.tokens++; if (t.drafted) marks.drafted++; }
      }
      const c = ch.choices[0];
      if (c) {
        const piece = endpoint === 'chat' ? c.delta?.content : c.text;
        if (piece) text += piece;
        if (piece && ttft_ms === null) ttft_ms = performance.now() - t0;
        if (c.delta?.role) role = c.delta.role;
        for (const t of c.delta?.tool_calls ?? []) {
          if (!calls[t.index]) {
            if (!t.id || !t.function?.name || t.index !== calls.length) calls_in_order = false;
            calls[t.index] = { id: t.id, type: t.type, function: { name: t.function?.name ?? '', arguments: '' } };
          } else if (t.id || t.function?.name) {
            calls_in_order = false;
          }
          calls[t.index].function.arguments += t.function?.arguments ?? '';
        }
        if (c.finish_reason) finish_reason = c.finish_reason;
      }
      if (ch.usage) usage = ch.usage;
      if (ch.pocketflash) pocketflash = ch.pocketflash;
    }
    return { ok: true, text, chunks, finish_reason, usage, pocketflash, role, marks, ms: performance.now() - t0, ttft_ms,
             tool_calls: calls.length ? calls : null, calls_in_order };
  } catch (e) {
    return { ok: false, status: e.status ?? null, error: e.error ?? null, message: String(e.message ?? e) };
  }
}

async function pool(items, concurrency, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

function rss(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : -1;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

if (mode === 'sdk') {
  const [inPath, outPath, conc] = args;
  const items = JSON.parse(readFileSync(inPath, 'utf8'));
  const clients = new Map();
  const out = await pool(items, Number(conc ?? 1), (it) => {
    if (!clients.has(it.key)) clients.set(it.key, sdk(it.key));
    return one(clients.get(it.key), it);
  });
  writeFileSync(outPath, JSON.stringify(out));
} else if (mode === 'burst') {
  const [inPath, outPath, conc] = args;
  const items = JSON.parse(readFileSync(inPath, 'utf8'));
  const client = sdk();
  const t0 = performance.now();
  const results = await pool(items, Number(conc ?? 1), (it) => one(client, it));
  writeFileSync(outPath, JSON.stringify({ wall_ms: performance.now() - t0, results }));
} else if (mode === 'raw') {
  const [inPath, outPath] = args;
  const out = [];
  for (const r of JSON.parse(readFileSync(inPath, 'utf8'))) {
    try {
      const res = await fetch(base + r.path, { method: r.method, headers: r.headers ?? {}, body: r.body });
      out.push({ status: res.status, body: await res.text() });
    } catch (e) {
      out.push({ status: -1, body: String(e) + (e.cause ? ` (cause: ${e.cause.code ?? ""} ${e.cause.message ?? e.cause})` : "") });
    }
  }
  writeFileSync(outPath, JSON.stringify(out));
} else if (mode === 'load') {
  const [outPath, nStr, cStr, pid] = args;
  const n = Number(nStr), conc = Number(cStr), client = sdk();
  const prompts = ['Say hi.', 'Name a color.', 'Count to three.', 'What is 2+2?', 'Name a fruit.', 'Say bye.',
                   'Name an animal.', 'Pick a number.'];
  const body = (p) => ({ model: 'm', messages: [{ role: 'user', content: p }], max_tokens: 8, temperature: 0 });
  const want = [];
  for (const p of prompts) want.push((await one(client, { endpoint: 'chat', body: body(p) })).text);
  const rssSamples = [rss(pid)];
  let failed = 0, wrong = 0, done = 0;
  const lat = [];
  const t0 = performance.now();
  await pool(Array.from({ length: n }, (_, i) => i), conc, async (i) => {
    const k = i % prompts.length;
    const r = await one(client, { endpoint: 'chat', body: { ...body(prompts[k]), stream: i % 4 === 3 } });
    if (!r.ok) failed++;
    else if (r.text !== want[k]) wrong++;
    else lat.push(r.ms);
    if (++done % 100 === 0) rssSamples.push(rss(pid));
  });
  const secs = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  writeFileSync(outPath, JSON.stringify({ n, clients: conc, failed, wrong, p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99),
                                          req_per_s: n / secs, seconds: secs, rss_kb: rssSamples,
                                          references: want }));
} else if (mode === 'disconnect') {
  const [outPath] = args;
  const client = sdk();
  // without end of turn: the story must still be running when the client leaves (test_serve.c
  // gives the server a context of many seconds' generation)
  const long = { model: 'm', messages: [{ role: 'user', content: 'Tell a long story.' }], max_tokens: 100000,
                 temperature: 0, stream: true, ignore_eos: true };
  const stream = await client.chat.completions.create(long);
  let chunks = 0;
  for await (const ch of stream) {
    if (ch.choices[0]?.delta?.content && ++chunks >= 3) break; // leaving the loop aborts the request
  }
  const t0 = performance.now();
  const after = await one(client, { endpoint: 'chat', body: { model: 'm', messages: [{ role: 'user', content: 'Say hi.' }],
                                                               max_tokens: 4, temperature: 0 } });
  const health = await (await fetch(`${base}/health`)).json();
  writeFileSync(outPath, JSON.stringify({ chunks, after, after_ms: performance.now() - t0, health }));
} else if (mode === 'vanish') {
  const [outPath, nStr] = args;
  const client = sdk();
  const long = { model: 'm', messages: [{ role: 'user', content: 'Tell a long story.' }], max_tokens: 100000,
                 temperature: 0, stream: true, ignore_eos: true };
  const drop = async () => {
    const stream = await client.chat.completions.create(long);
    let chunks = 0;
    for await (const ch of stream) {
      if (ch.choices[0]?.delta?.content && ++chunks >= 3) break; // leaving the loop aborts the request
    }
    return chunks;
  };
  const short = one(client, { endpoint: 'chat', body: { model: 'm', messages: [{ role: 'user', content: 'Say hi.' }],
                                                         max_tokens: 8, temperature: 0 } });
  const chunks = await Promise.all(Array.from({ length: Number(nStr) }, drop));
  const during = await short;
  // the server notices a vanished client at its next token: wait until every place is free
  let health = null;
  for (let i = 0; i < 600; i++) {
    health = await (await fetch(`${base}/health`)).json();
    if (health.sessions_busy === 0 && health.queued === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const after = await one(client, { endpoint: 'chat', body: { model: 'm', messages: [{ role: 'user', content: 'Say hi.' }],
                                                               max_tokens: 8, temperature: 0 } });
  writeFileSync(outPath, JSON.stringify({ chunks, during, after, health }));
} else if (mode === 'turns') {
  const [outPath] = args;
  const client = sdk();
  const ask = (messages) => one(client, { endpoint: 'chat', body: { model: 'm', messages, max_tokens: 24, temperature: 0 } });
  const x = [{ role: 'user', content: 'What is the capital of France?' }];
  const y = [{ role: 'user', content: 'Write a short poem about the sea.' }];
  const x1 = await ask(x), y1 = await ask(y);
  const x2 = await ask([...x, { role: 'assistant', content: x1.text }, { role: 'user', content: 'And of Spain?' }]);
  const y2 = await ask([...y, { role: 'assistant', content: y1.text }, { role: 'user', content: 'Another one.' }]);
  writeFileSync(outPath, JSON.stringify([x1, y1, x2, y2]));
} else {
  console.error(`client.mjs: unknown mode ${mode}`);
  process.exit(2);
}
