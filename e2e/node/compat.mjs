// compat.mjs: the official openai npm client against a running gatewayd.
//
// Environment:
//   GW_BASE_URL     the gateway's OpenAI base URL, such as http://127.0.0.1:8080/v1
//   GW_TOKEN        a bearer token of a tenant that allows lm-4-scout and lm-embed
//   GW_DENIED_MODEL an alias outside that tenant's allowlist (default lm-transcribe)
//   GW_CUT_MODEL    optional: an alias whose backend cuts its stream half-way
//   GW_FALLBACK     "1" when lm-4-scout is expected to fall back (local backend down),
//                   so that a backend_fallback notice must be seen
//
// It prints one line per check ("ok <name>" or "FAIL <name>: why"), then
// "N passed, N failed", and exits 1 when a check failed.
import OpenAI from 'openai';

const baseURL = process.env.GW_BASE_URL;
const apiKey = process.env.GW_TOKEN;
if (!baseURL || !apiKey) {
  console.error('set GW_BASE_URL and GW_TOKEN');
  process.exit(2);
}
const deniedModel = process.env.GW_DENIED_MODEL || 'lm-transcribe';
const cutModel = process.env.GW_CUT_MODEL || '';
const expectFallback = process.env.GW_FALLBACK === '1';

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20000 });

let passed = 0;
let failed = 0;

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    const why = e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : String(e);
    console.log(`FAIL ${name}: ${why}`);
  }
}

const messages = [{ role: 'user', content: 'Say hello' }];

await check('chat non-streaming', async () => {
  const { data: completion, response } = await client.chat.completions
    .create({ model: 'lm-4-scout', messages })
    .withResponse();
  const text = completion.choices[0]?.message?.content;
  assert(typeof text === 'string' && text.length > 0, `no message content: ${JSON.stringify(completion)}`);
  assert(completion.object === 'chat.completion', `object ${completion.object}`);
  assert(completion._request_id, 'no x-request-id (completion._request_id)');
  if (expectFallback) {
    const notice = response.headers.get('gw-notice') || '';
    assert(notice.includes('backend_fallback'), `GW-Notice header ${JSON.stringify(notice)}, want backend_fallback`);
  }
});

await check('chat streaming (async iterator, accumulating deltas)', async () => {
  const stream = await client.chat.completions.create({
    model: 'lm-4-scout',
    messages,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let notices = 0;
  let usage = null;
  let id = null;
  for await (const chunk of stream) {
    chunks++;
    assert(chunk.object === 'chat.completion.chunk', `chunk object ${JSON.stringify(chunk).slice(0, 200)}`);
    id = id ?? chunk.id;
    assert(chunk.id === id, `chunk id ${chunk.id} differs from the stream's ${id}`);
    // typical client code: must not throw on any chunk, notices included
    text += chunk.choices[0]?.delta?.content || '';
    if (chunk.gw_notice) {
      notices++;
      assert(Array.isArray(chunk.choices) && chunk.choices.length === 0, 'notice chunk has choices');
      assert(chunk.gw_notice.code === 'backend_fallback', `notice code ${chunk.gw_notice.code}`);
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert(chunks > 0 && text.length > 0, `accumulated ${JSON.stringify(text)} from ${chunks} chunks`);
  assert(usage && usage.total_tokens > 0, 'no usage chunk although stream_options.include_usage');
  if (expectFallback) assert(notices === 1, `saw ${notices} gw.notice chunks, want 1`);
});

await check('chat streaming (ChatCompletionStream helper, finalChatCompletion)', async () => {
  const runner = client.chat.completions.stream({ model: 'lm-4-scout', messages });
  let deltas = '';
  runner.on('content', (delta) => {
    deltas += delta;
  });
  const final = await runner.finalChatCompletion();
  const text = final.choices[0]?.message?.content;
  assert(typeof text === 'string' && text.length > 0, `final completion ${JSON.stringify(final)}`);
  assert(deltas === text, `content events ${JSON.stringify(deltas)} != final ${JSON.stringify(text)}`);
});

await check('error: model not in allowlist raises APIError 400', async () => {
  let err = null;
  try {
    await client.chat.completions.create({ model: deniedModel, messages });
  } catch (e) {
    err = e;
  }
  assert(err, 'no error raised');
  assert(err instanceof OpenAI.APIError, `not an APIError: ${err}`);
  assert(err instanceof OpenAI.BadRequestError, `not a BadRequestError: ${err.constructor.name}`);
  assert(err.status === 400, `status ${err.status}`);
  assert(err.code === 'model_not_in_allowlist', `code ${err.code}`);
  assert(err.param === 'model', `param ${err.param}`);
  assert(err.type === 'invalid_request_error', `type ${err.type}`);
  assert(err.requestID, 'no request id on the error');
});

await check('error: bad token raises AuthenticationError 401', async () => {
  const bad = new OpenAI({ baseURL, apiKey: 'not-a-token', maxRetries: 0 });
  let err = null;
  try {
    await bad.models.list();
  } catch (e) {
    err = e;
  }
  assert(err instanceof OpenAI.AuthenticationError, `want AuthenticationError, got ${err}`);
  assert(err.code === 'invalid_authorization', `code ${err.code}`);
});

await check('embeddings', async () => {
  const res = await client.embeddings.create({ model: 'lm-embed', input: ['alpha', 'beta'], encoding_format: 'float' });
  assert(res.object === 'list' && res.data.length === 2, `embeddings ${JSON.stringify(res).slice(0, 200)}`);
  assert(Array.isArray(res.data[0].embedding) && res.data[0].embedding.length > 0, 'empty embedding');
  assert(res.data[1].index === 1, 'index');
});

await check('models.list', async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert(m.object === 'model', `object ${m.object}`);
    ids.push(m.id);
  }
  assert(ids.includes('lm-4-scout') && ids.includes('lm-embed'), `ids ${ids}`);
  assert(!ids.includes(deniedModel), `the denied ${deniedModel} is listed`);
});

if (cutModel) {
  await check('cut stream raises an APIError (gw.error)', async () => {
    const stream = await client.chat.completions.create({ model: cutModel, messages, stream: true });
    let err = null;
    let text = '';
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content || '';
    } catch (e) {
      err = e;
    }
    assert(err, `the cut stream ended without an error (got ${JSON.stringify(text)})`);
    assert(err instanceof OpenAI.APIError, `not an APIError: ${err}`);
  });
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
