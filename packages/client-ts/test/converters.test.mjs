// The converters give byte-identical JSON to the Python ones (convostore.convert) on the
// shared corpus tests/fixtures/converters.json, whose expected outputs Python wrote and
// tests/core/test_convert_corpus.py checks on the Python side.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ConvostoreClient, toAnthropicMessages, toAnthropicSystem, toOpenAIInput } from "@convostore/client";

const corpus = JSON.parse(
  readFileSync(new URL("../../../tests/fixtures/converters.json", import.meta.url), "utf8"),
);

test("the corpus holds the kinds of content the converters read", () => {
  assert.ok(corpus.length >= 10);
  const names = corpus.map((c) => c.name);
  for (const kind of ["multimodal user", "chat tool calls", "anthropic blocks", "responses items"]) {
    assert.ok(names.includes(kind), kind);
  }
});

for (const c of corpus) {
  test(`converters match Python: ${c.name}`, () => {
    assert.equal(JSON.stringify(toAnthropicMessages(c.messages)), c.anthropic);
    assert.equal(JSON.stringify(toAnthropicSystem(c.messages)), c.system);
    assert.equal(JSON.stringify(toOpenAIInput(c.messages)), c.openai);
  });
}

test("the client's methods are the same converters", () => {
  const client = new ConvostoreClient({ baseUrl: "http://127.0.0.1:9" });
  const tools = corpus.find((c) => c.name === "chat tool calls");
  assert.equal(JSON.stringify(client.toOpenAIInput(tools.messages)), tools.openai);
  assert.equal(JSON.stringify(client.toAnthropicMessages(tools.messages)), tools.anthropic);
});

test("the converters do not change their input", () => {
  for (const c of corpus) {
    const before = JSON.stringify(c.messages);
    toAnthropicMessages(c.messages);
    toOpenAIInput(c.messages);
    assert.equal(JSON.stringify(c.messages), before);
  }
});
