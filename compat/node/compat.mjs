// Talks to a chatgw gateway with the official openai client, the way an
// application would, and exits non-zero on the first difference from what the
// gateway promises. OPENAI_BASE_URL, OPENAI_API_KEY and EXPECT_CONTENT come
// from compat_test.go.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ maxRetries: 0 });
const want = process.env.EXPECT_CONTENT;
const messages = [{ role: "user", content: "Hello" }];

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
    process.exitCode = 1;
  }
}

await check("chat completion", async () => {
  const c = await client.chat.completions.create({ model: "lm-4-scout", messages });
  assert.equal(c.choices[0].message.content, want);
});

await check("streamed chat with a gw.notice chunk", async () => {
  const stream = await client.chat.completions.create({
    model: "lm-4-scout", messages, stream: true, stream_options: { include_usage: true },
  });
  let text = "", notices = 0, usage = null;
  for await (const chunk of stream) {
    if (chunk.gw_notice) notices++;
    if (chunk.usage) usage = chunk.usage;
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  assert.equal(text, want);
  assert.ok(usage, "usage chunk");
  assert.equal(notices, 1, "one backend_fallback notice");
});

await check("stream helper accumulates the answer", async () => {
  const stream = client.chat.completions.stream({ model: "lm-4-scout", messages });
  const done = await stream.finalChatCompletion();
  assert.equal(done.choices[0].message.content, want);
});

await check("error envelope raises APIError", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "not-a-model", messages }),
    (err) => {
      assert.ok(err instanceof OpenAI.APIError, "APIError");
      assert.equal(err.status, 400);
      assert.equal(err.code, "model_not_in_allowlist");
      assert.equal(err.param, "model");
      assert.ok(err.headers.get("x-request-id"), "x-request-id");
      return true;
    });
});

await check("embeddings", async () => {
  const e = await client.embeddings.create({ model: "lm-embed", input: ["a", "b"] });
  assert.equal(e.data.length, 2);
});

await check("models list", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes("lm-4-scout"), ids.join(","));
});
