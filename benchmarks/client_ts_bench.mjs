// The TypeScript client against a bare fetch of the same endpoint, side by side, interleaved:
// a page read (GET .../messages?limit=20) and an append (POST .../messages), one request at a
// time. Run by benchmarks/client_ts_bench.py, which starts the server:
//   node benchmarks/client_ts_bench.mjs BASE TOKEN [ROUNDS] [CALLS]
import { readFileSync } from "node:fs";

import { ConvostoreClient } from "../packages/client-ts/dist/index.js";

const [base, token, roundsArg = "20", callsArg = "50"] = process.argv.slice(2);
const ROUNDS = Number(roundsArg);
const CALLS = Number(callsArg);
const client = new ConvostoreClient({ baseUrl: base, token });
const auth = { Authorization: `Bearer ${token}` };
const PAGE = "bench-page";
const APPENDS = "bench-appends";

const sides = {
  "GET messages?limit=20": {
    bare: async () => {
      const r = await fetch(`${base}/conversations/${PAGE}/messages?limit=20`, { headers: auth });
      if (!r.ok) throw new Error(`${r.status}`);
      return r.json();
    },
    client: () => client.getMessagesPage({ conversationId: PAGE, limit: 20 }),
  },
  "POST messages": {
    bare: async () => {
      const r = await fetch(`${base}/conversations/${APPENDS}/messages`, {
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json" },
        body: JSON.stringify({ role: "user", content: "a message of a benchmark", metadata: { n: 1 } }),
      });
      if (!r.ok) throw new Error(`${r.status}`);
      return r.json();
    },
    client: () =>
      client.appendMessage({
        conversationId: APPENDS,
        role: "user",
        content: "a message of a benchmark",
        metadata: { n: 1 },
      }),
  },
};

async function timed(fn, n, into) {
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn();
    into.push(performance.now() - start);
  }
}

const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

await client.appendMessages({
  conversationId: PAGE,
  messages: Array.from({ length: 100 }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `message ${i} `.repeat(10),
  })),
});
const version = JSON.parse(
  readFileSync(new URL("../packages/client-ts/package.json", import.meta.url)),
).version;
console.log(
  `@convostore/client ${version} on Node ${process.versions.node}; ${ROUNDS * CALLS} calls a side, one request at a time, the sides taking turns call by call (which goes first alternating), after a warm-up; ms a call.\n`,
);
console.log(
  "| request | bare fetch mean / p50 / p99 | client mean / p50 / p99 | client / bare, mean | client / bare, p50 |",
);
console.log("|---|---|---|---|---|");
for (const [name, { bare, client: viaClient }] of Object.entries(sides)) {
  await timed(bare, CALLS, []);
  await timed(viaClient, CALLS, []);
  const times = { bare: [], client: [] };
  for (let i = 0; i < ROUNDS * CALLS; i++) {
    const order = i % 2 ? ["client", "bare"] : ["bare", "client"];
    for (const side of order) await timed(side === "bare" ? bare : viaClient, 1, times[side]);
  }
  const cell = (xs) =>
    `${mean(xs).toFixed(2)} / ${quantile(xs, 0.5).toFixed(2)} / ${quantile(xs, 0.99).toFixed(2)}`;
  const ratio = (f) => `${(f(times.client) / f(times.bare)).toFixed(2)}x`;
  console.log(
    `| ${name} | ${cell(times.bare)} | ${cell(times.client)} | ${ratio(mean)} | ${ratio((xs) => quantile(xs, 0.5))} |`,
  );
}

// The client's own work, without the network: both sides get the same answer from a fetch
// that hands back a prepared Response at once (µs a call).
const page = await (await fetch(`${base}/conversations/${PAGE}/messages?limit=20`, { headers: auth })).text();
const canned = async () =>
  new Response(page, { status: 200, headers: { "Content-Type": "application/json" } });
const offline = new ConvostoreClient({ baseUrl: base, token, fetch: canned });
const N = 20_000;
const perCall = async (fn) => {
  for (let i = 0; i < 1000; i++) await fn();
  const start = performance.now();
  for (let i = 0; i < N; i++) await fn();
  return ((performance.now() - start) / N) * 1000;
};
const bareUs = await perCall(async () =>
  (await canned(`${base}/conversations/${PAGE}/messages?limit=20`, { headers: auth })).json(),
);
const clientUs = await perCall(() => offline.getMessagesPage({ conversationId: PAGE, limit: 20 }));
console.log(
  "\nThe client's own work on a page of 20 messages, the answer handed back at once by an injected fetch (µs a call):\n",
);
console.log("| side | µs |");
console.log("|---|---|");
console.log(`| bare: a Response's json() | ${bareUs.toFixed(1)} |`);
console.log(
  `| client: getMessagesPage (checks, URL, headers, json(), null fields left out) | ${clientUs.toFixed(1)} |`,
);
console.log(`| the client's own cost | ${(clientUs - bareUs).toFixed(1)} |`);
