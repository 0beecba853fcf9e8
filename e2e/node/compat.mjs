// compat.mjs: the official openai and @anthropic-ai/sdk npm clients, the
// Vercel AI SDK's default OpenAI provider (ai + @ai-sdk/openai), LangChain's
// ChatOpenAI (@langchain/openai) and the OpenAI Agents SDK (@openai/agents),
// against a running gatewayd.
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
import { generateText, streamText, tool, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, run, tool as agentTool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from '@openai/agents';

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

// ---- OpenAI's Responses API (issue 17 items 1 and 2) ----

const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};

await check('responses.create, then retrieve, inputItems.list and delete', async () => {
  const { data: r, response } = await client.responses
    .create({ model: 'lm-4-scout', input: 'Say hello', instructions: 'Be brief.', metadata: { k: 'v' } })
    .withResponse();
  assert(r.object === 'response' && r.status === 'completed' && r.model === 'lm-4-scout', `response ${JSON.stringify(r)}`);
  assert(typeof r.output_text === 'string' && r.output_text.length > 0, `output_text ${JSON.stringify(r.output_text)}`);
  assert(r.usage.total_tokens > 0 && r.usage.input_tokens_details.cached_tokens === 0, `usage ${JSON.stringify(r.usage)}`);
  assert(r.metadata.k === 'v', `metadata ${JSON.stringify(r.metadata)}`);
  if (expectFallback) {
    const notice = response.headers.get('gw-notice') || '';
    assert(notice.includes('backend_fallback'), `GW-Notice header ${JSON.stringify(notice)}, want backend_fallback`);
  }
  const got = await client.responses.retrieve(r.id);
  assert(got.id === r.id && got.output_text === r.output_text, `retrieved ${JSON.stringify(got)}`);
  const items = [];
  for await (const it of client.responses.inputItems.list(r.id)) items.push(it);
  assert(items.length === 1 && items[0].type === 'message' && items[0].role === 'user', `input items ${JSON.stringify(items)}`);
  await client.responses.delete(r.id);
  let err = null;
  try {
    await client.responses.retrieve(r.id);
  } catch (e) {
    err = e;
  }
  assert(err instanceof OpenAI.NotFoundError && err.code === 'response_not_found', `retrieve after delete: want NotFoundError, got ${err}`);
});

await check('responses.create stream (raw events)', async () => {
  const stream = await client.responses.create({ model: 'lm-4-scout', input: 'Say hello', stream: true });
  const types = [];
  let text = '';
  for await (const ev of stream) {
    // typical client code: switch on the type, ignore the others
    assert(ev.sequence_number === types.length, `event ${ev.type} sequence_number ${ev.sequence_number}, want ${types.length}`);
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
  }
  assert(types[0] === 'response.created' && types.at(-1) === 'response.completed', `events ${types}`);
  assert(text.length > 0, `streamed text ${JSON.stringify(text)}`);
  if (expectFallback) assert(types.includes('gw.notice'), `events ${types}: want the gw.notice event`);
});

await check('responses.stream (ResponseStream helper, finalResponse)', async () => {
  const stream = client.responses.stream({ model: 'lm-4-scout', input: 'Say hello' });
  let deltas = '';
  stream.on('response.output_text.delta', (ev) => {
    deltas += ev.delta;
  });
  const final = await stream.finalResponse();
  // the helper's final response has no output_text (the SDK adds it on create only)
  const text = final.output.filter((it) => it.type === 'message').flatMap((it) => it.content).map((c) => c.text).join('');
  assert(final.status === 'completed' && text.length > 0 && text === deltas, `final ${JSON.stringify(final)} vs deltas ${JSON.stringify(deltas)}`);
  assert(final.usage.output_tokens > 0, `usage ${JSON.stringify(final.usage)}`);
});

if (toolModel) {
  await check('responses function call over two turns (stream, then previous_response_id)', async () => {
    const first = await client.responses.stream({ model: toolModel, input: 'Weather in Paris?', tools: [weatherTool] }).finalResponse();
    const call = first.output.find((it) => it.type === 'function_call');
    assert(call && call.name === 'get_weather' && JSON.parse(call.arguments).city === 'Paris', `first turn ${JSON.stringify(first.output)}`);
    const second = await client.responses.create({
      model: toolModel,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 24°C' }],
      tools: [weatherTool],
    });
    assert(second.status === 'completed' && second.output_text.length > 0, `second turn ${JSON.stringify(second)}`);
  });

  await check('responses function call over two turns (items sent back, store false)', async () => {
    const input = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.responses.create({ model: toolModel, input, tools: [weatherTool], store: false });
    const call = first.output.find((it) => it.type === 'function_call');
    assert(call && JSON.parse(call.arguments).city === 'Paris', `first turn ${JSON.stringify(first.output)}`);
    input.push(...first.output, { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 24°C' });
    const second = await client.responses.create({ model: toolModel, input, tools: [weatherTool], store: false });
    assert(second.status === 'completed' && second.output_text.length > 0, `second turn ${JSON.stringify(second)}`);
  });
}

await check('responses error: a built-in tool raises BadRequestError naming it', async () => {
  let err = null;
  try {
    await client.responses.create({ model: 'lm-4-scout', input: 'x', tools: [{ type: 'web_search' }] });
  } catch (e) {
    err = e;
  }
  assert(err instanceof OpenAI.BadRequestError && err.code === 'invalid_field' && err.param === 'tools[0].type', `want BadRequestError tools[0].type, got ${err}`);
});

if (cutModel) {
  await check('responses cut stream raises an APIError after response.failed', async () => {
    const stream = await client.responses.create({ model: cutModel, input: 'Say hello', stream: true });
    const types = [];
    let err = null;
    try {
      for await (const ev of stream) types.push(ev.type);
    } catch (e) {
      err = e;
    }
    assert(err instanceof OpenAI.APIError, `the cut stream ended without an APIError (events ${types})`);
    assert(types.includes('response.output_text.delta') && types.at(-1) === 'response.failed', `events ${types}`);
    let helperErr = null;
    try {
      await client.responses.stream({ model: cutModel, input: 'Say hello' }).finalResponse();
    } catch (e) {
      helperErr = e;
    }
    assert(helperErr instanceof OpenAI.APIError, `responses.stream finalResponse: want an APIError, got ${helperErr}`);
  });
}

// ---- the Vercel AI SDK's default provider: openai(model) calls /v1/responses ----

const sent = [];
const aiOpenAI = createOpenAI({
  baseURL,
  apiKey,
  fetch: async (url, init) => {
    if (String(url).endsWith('/responses')) sent.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});
const weather = tool({
  description: 'Weather of a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `sunny in ${city}`,
});

await check('ai generateText (openai(model): /v1/responses)', async () => {
  const n = sent.length;
  const { text, finishReason, usage, response } = await generateText({ model: aiOpenAI('lm-4-scout'), prompt: 'Say hello', maxRetries: 0 });
  assert(sent.length === n + 1, 'the provider did not call /v1/responses');
  assert(text.length > 0 && finishReason === 'stop', `text ${JSON.stringify(text)}, finishReason ${finishReason}`);
  assert(usage.inputTokens > 0 && usage.outputTokens > 0, `usage ${JSON.stringify(usage)}`);
  assert(response.modelId === 'lm-4-scout', `modelId ${response.modelId}`);
});

await check('ai streamText', async () => {
  const errors = [];
  const result = streamText({ model: aiOpenAI('lm-4-scout'), prompt: 'Say hello', maxRetries: 0, onError: ({ error }) => errors.push(error) });
  let text = '';
  for await (const d of result.textStream) text += d;
  assert(text.length > 0 && (await result.finishReason) === 'stop', `text ${JSON.stringify(text)}`);
  assert(errors.length === 0, `errors ${errors}`);
  assert((await result.usage).outputTokens > 0, 'no usage');
});

await check('ai generateText over two turns (the earlier answer sent back as an item_reference)', async () => {
  const first = await generateText({ model: aiOpenAI('lm-4-scout'), prompt: 'Say hello', maxRetries: 0 });
  const n = sent.length;
  const second = await generateText({
    model: aiOpenAI('lm-4-scout'),
    messages: [{ role: 'user', content: 'Say hello' }, ...first.response.messages, { role: 'user', content: 'Again?' }],
    maxRetries: 0,
  });
  const input = JSON.stringify(sent[n]?.input);
  assert(input.includes('"item_reference"'), `second request input ${input}: want the earlier answer as an item_reference`);
  assert(second.text.length > 0, `second turn text ${JSON.stringify(second.text)}`);
});

if (toolModel) {
  await check('ai generateText tool call over two turns', async () => {
    const n = sent.length;
    const result = await generateText({
      model: aiOpenAI(toolModel),
      prompt: 'Weather in Paris?',
      tools: { get_weather: weather },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
    });
    assert(result.steps.length === 2, `steps ${result.steps.length}`);
    const call = result.steps[0].toolCalls[0];
    assert(call && call.toolName === 'get_weather' && call.input.city === 'Paris', `tool call ${JSON.stringify(call)}`);
    assert(result.text.length > 0, `final text ${JSON.stringify(result.text)}`);
    // this AI SDK sends a function call back by value (item_reference only
    // for text and provider-executed tools), with its output
    const second = JSON.stringify(sent[n + 1]?.input);
    assert(second.includes('"function_call"') && second.includes('"function_call_output"'), `second request input ${second}`);
  });

  await check('ai streamText tool call over two turns', async () => {
    const errors = [];
    const result = streamText({
      model: aiOpenAI(toolModel),
      prompt: 'Weather in Paris?',
      tools: { get_weather: weather },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
      onError: ({ error }) => errors.push(error),
    });
    let text = '';
    for await (const d of result.textStream) text += d;
    const steps = await result.steps;
    assert(errors.length === 0, `errors ${errors}`);
    assert(steps.length === 2 && steps[0].toolCalls[0]?.input.city === 'Paris' && text.length > 0, `steps ${steps.length}, text ${JSON.stringify(text)}`);
  });
}

if (cutModel) {
  await check('ai streamText cut stream surfaces an error', async () => {
    const errors = [];
    const result = streamText({ model: aiOpenAI(cutModel), prompt: 'Say hello', maxRetries: 0, onError: ({ error }) => errors.push(error) });
    let text = '';
    for await (const d of result.textStream) text += d;
    assert(errors.length > 0, `no error surfaced (text ${JSON.stringify(text)})`);
  });
}

// ---- LangChain's ChatOpenAI: chat completions by default, /v1/responses with useResponsesApi ----

// paths records the paths the clients below call, so that a check knows
// which API it drove.
const paths = [];
const recordingFetch = (url, init) => {
  paths.push(new URL(String(url)).pathname);
  return fetch(url, init);
};
const calledOnly = (n, path) => paths.length > n && paths.slice(n).every((p) => p.endsWith(path));

for (const useResponsesApi of [false, true]) {
  const api = useResponsesApi ? 'useResponsesApi' : 'chat completions';
  const lc = (model) => new ChatOpenAI({ model, apiKey, configuration: { baseURL, fetch: recordingFetch }, useResponsesApi, maxRetries: 0 });
  const path = useResponsesApi ? '/responses' : '/chat/completions';

  await check(`langchain ChatOpenAI invoke and stream (${api})`, async () => {
    const n = paths.length;
    const msg = await lc('lm-4-scout').invoke('Say hello');
    assert(typeof msg.content === 'string' ? msg.content.length > 0 : msg.text.length > 0, `message ${JSON.stringify(msg)}`);
    let text = '';
    for await (const chunk of await lc('lm-4-scout').stream('Say hello')) text += chunk.text;
    assert(text.length > 0, `streamed ${JSON.stringify(text)}`);
    assert(calledOnly(n, path), `called ${paths.slice(n)}, want ${path}`);
  });

  if (toolModel) {
    await check(`langchain ChatOpenAI tool call over two turns (${api})`, async () => {
      const model = lc(toolModel).bindTools([
        { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
      ]);
      const history = [{ role: 'user', content: 'Weather in Paris?' }];
      const first = await model.invoke(history);
      const call = first.tool_calls?.[0];
      assert(call && call.name === 'get_weather' && call.args.city === 'Paris', `first turn ${JSON.stringify(first)}`);
      history.push(first, { role: 'tool', tool_call_id: call.id, content: 'sunny, 24°C' });
      const second = await model.invoke(history);
      assert(second.text.length > 0, `second turn ${JSON.stringify(second)}`);
    });
  }
}

// ---- the OpenAI Agents SDK: its default model is the Responses API ----

setTracingDisabled(true); // its traces would go to OpenAI's servers
setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20000, fetch: recordingFetch }));
setOpenAIAPI('responses');

await check('agents run (default Responses model)', async () => {
  const n = paths.length;
  const agent = new Agent({ name: 'Greeter', instructions: 'Be brief.', model: 'lm-4-scout' });
  const result = await run(agent, 'Say hello');
  assert(calledOnly(n, '/responses'), `called ${paths.slice(n)}, want /responses`);
  assert(typeof result.finalOutput === 'string' && result.finalOutput.length > 0, `finalOutput ${JSON.stringify(result.finalOutput)}`);
  const streamed = await run(agent, 'Say hello', { stream: true });
  let text = '';
  for await (const chunk of streamed.toTextStream()) text += chunk;
  await streamed.completed;
  assert(text.length > 0 && streamed.finalOutput === text, `streamed ${JSON.stringify(text)} vs ${JSON.stringify(streamed.finalOutput)}`);
});

if (toolModel) {
  await check('agents run with a function tool over two turns', async () => {
    const getWeather = agentTool({
      name: 'get_weather',
      description: 'Weather of a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => `sunny in ${city}`,
    });
    const agent = new Agent({ name: 'Weather', instructions: 'Use the tool.', model: toolModel, tools: [getWeather] });
    const result = await run(agent, 'Weather in Paris?');
    const calls = result.newItems.filter((it) => it.type === 'tool_call_item');
    assert(calls.length === 1 && JSON.parse(calls[0].rawItem.arguments).city === 'Paris', `items ${JSON.stringify(result.newItems.map((it) => it.type))}`);
    assert(typeof result.finalOutput === 'string' && result.finalOutput.length > 0, `finalOutput ${JSON.stringify(result.finalOutput)}`);
  });
}

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
