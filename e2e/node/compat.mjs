// compat.mjs: the official openai and @anthropic-ai/sdk npm clients against a
// running gatewayd.
//
// Environment:
//   GW_BASE_URL     the gateway's OpenAI base URL, such as http://127.0.0.1:8080/v1
//                   (Anthropic's client gets it without /v1: it adds /v1/messages)
//   GW_TOKEN        a token of a tenant that allows lm-4-scout and lm-embed
//   GW_DENIED_MODEL an alias outside that tenant's allowlist (default lm-transcribe)
//   GW_CUT_MODEL    optional: an alias whose backend cuts its stream half-way
//   GW_FALLBACK     "1" when lm-4-scout is expected to fall back (local backend down),
//                   so that a backend_fallback notice must be seen
//   GW_TOOL_MODEL   optional: an alias whose backend calls the first tool it is
//                   offered, with {"city":"Paris"}, until it gets the tool's result
//
// It prints one line per check ("ok <name>" or "FAIL <name>: why"), then
// "N passed, N failed", and exits 1 when a check failed.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.env.GW_BASE_URL;
const apiKey = process.env.GW_TOKEN;
if (!baseURL || !apiKey) {
  console.error('set GW_BASE_URL and GW_TOKEN');
  process.exit(2);
}
const deniedModel = process.env.GW_DENIED_MODEL || 'lm-transcribe';
const cutModel = process.env.GW_CUT_MODEL || '';
const expectFallback = process.env.GW_FALLBACK === '1';
const toolModel = process.env.GW_TOOL_MODEL || '';
const rootURL = baseURL.replace(/\/v1\/?$/, '');

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

// ---- models.retrieve (issue 17 item 4) ----

await check('models.retrieve', async () => {
  const m = await client.models.retrieve('lm-4-scout');
  assert(m.id === 'lm-4-scout' && m.object === 'model' && typeof m.created === 'number', `model ${JSON.stringify(m)}`);
  let err = null;
  try {
    await client.models.retrieve(deniedModel);
  } catch (e) {
    err = e;
  }
  assert(err instanceof OpenAI.NotFoundError, `retrieve(${deniedModel}): want NotFoundError, got ${err}`);
});

// ---- Anthropic's Messages API (issue 17 item 3) ----

const anthropic = new Anthropic({ baseURL: rootURL, apiKey, maxRetries: 0, timeout: 20000 });
const ask = { model: 'lm-4-scout', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello' }] };

await check('anthropic messages.create', async () => {
  const { data: msg, response } = await anthropic.messages.create(ask).withResponse();
  assert(msg.type === 'message' && msg.role === 'assistant' && msg.model === 'lm-4-scout', `message ${JSON.stringify(msg)}`);
  assert(msg.content[0]?.type === 'text' && msg.content[0].text.length > 0, `content ${JSON.stringify(msg.content)}`);
  assert(msg.stop_reason === 'end_turn', `stop_reason ${msg.stop_reason}`);
  assert(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0, `usage ${JSON.stringify(msg.usage)}`);
  if (expectFallback) {
    const notice = response.headers.get('gw-notice') || '';
    assert(notice.includes('backend_fallback'), `GW-Notice header ${JSON.stringify(notice)}, want backend_fallback`);
  }
});

await check('anthropic messages.create stream (raw events)', async () => {
  const stream = await anthropic.messages.create({ ...ask, stream: true });
  const types = [];
  let text = '';
  for await (const ev of stream) {
    // typical client code: switch on the type, ignore the others
    types.push(ev.type);
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
  }
  assert(types[0] === 'message_start' && types.at(-1) === 'message_stop', `events ${types}`);
  assert(text.length > 0, `streamed text ${JSON.stringify(text)}`);
  if (expectFallback) assert(types.includes('gw.notice'), `events ${types}: want the gw.notice event`);
});

await check('anthropic messages.stream (MessageStream helper, finalMessage)', async () => {
  const stream = anthropic.messages.stream(ask);
  let deltas = '';
  stream.on('text', (d) => {
    deltas += d;
  });
  const final = await stream.finalMessage();
  const text = final.content[0]?.text;
  assert(typeof text === 'string' && text.length > 0 && text === deltas, `final ${JSON.stringify(final)} vs deltas ${JSON.stringify(deltas)}`);
  assert(final.stop_reason === 'end_turn' && final.usage.output_tokens > 0, `stop_reason ${final.stop_reason}, usage ${JSON.stringify(final.usage)}`);
});

await check('anthropic messages.countTokens', async () => {
  const n = await anthropic.messages.countTokens({ model: 'lm-4-scout', messages: ask.messages });
  assert(Number.isInteger(n.input_tokens) && n.input_tokens > 0, `count ${JSON.stringify(n)}`);
});

if (toolModel) {
  await check('anthropic tool use over two turns (stream, then create)', async () => {
    const tools = [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const messages = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await anthropic.messages.stream({ model: toolModel, max_tokens: 256, tools, messages }).finalMessage();
    const call = first.content.find((b) => b.type === 'tool_use');
    assert(first.stop_reason === 'tool_use' && call, `first turn ${JSON.stringify(first)}`);
    assert(call.name === 'get_weather' && call.input.city === 'Paris', `tool_use ${JSON.stringify(call)}`);
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny, 24°C' }] });
    const second = await anthropic.messages.create({ model: toolModel, max_tokens: 256, tools, messages });
    assert(second.stop_reason === 'end_turn' && second.content[0]?.type === 'text' && second.content[0].text.length > 0, `second turn ${JSON.stringify(second)}`);
  });
}

await check('anthropic error: model not in allowlist raises BadRequestError', async () => {
  let err = null;
  try {
    await anthropic.messages.create({ ...ask, model: deniedModel });
  } catch (e) {
    err = e;
  }
  assert(err instanceof Anthropic.BadRequestError, `want BadRequestError, got ${err}`);
  assert(err.status === 400 && err.type === 'invalid_request_error', `status ${err.status}, type ${err.type}`);
  assert(err.error?.error?.code === 'model_not_in_allowlist' && err.error.error.param === 'model', `body ${JSON.stringify(err.error)}`);
});

await check('anthropic error: bad x-api-key raises AuthenticationError', async () => {
  const bad = new Anthropic({ baseURL: rootURL, apiKey: 'not-a-token', maxRetries: 0 });
  let err = null;
  try {
    await bad.messages.create(ask);
  } catch (e) {
    err = e;
  }
  assert(err instanceof Anthropic.AuthenticationError, `want AuthenticationError, got ${err}`);
  assert(err.type === 'authentication_error' && err.error?.error?.code === 'invalid_authorization', `body ${JSON.stringify(err.error)}`);
});

await check('anthropic bearer (authToken) authenticates too', async () => {
  const bearer = new Anthropic({ baseURL: rootURL, authToken: apiKey, maxRetries: 0, timeout: 20000 });
  const msg = await bearer.messages.create(ask);
  assert(msg.type === 'message', `message ${JSON.stringify(msg)}`);
});

if (cutModel) {
  await check('anthropic cut stream raises an APIError (event: error)', async () => {
    const stream = anthropic.messages.stream({ ...ask, model: cutModel });
    let text = '';
    stream.on('text', (d) => {
      text += d;
    });
    let err = null;
    try {
      await stream.finalMessage();
    } catch (e) {
      err = e;
    }
    assert(err instanceof Anthropic.APIError, `the cut stream ended without an APIError (got ${err}, text ${JSON.stringify(text)})`);
    assert(err.type === 'api_error' && err.error?.error?.code === 'upstream_error', `error ${JSON.stringify(err.error)}`);
    assert(text.length > 0, 'no text before the cut');
  });
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
