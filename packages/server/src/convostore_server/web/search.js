// Search over the signed-in user's messages (an admin's: every user's): the hits of
// GET /search/messages newest first, each linking to its conversation scrolled to the message,
// a page at a time. The matched text is marked with <mark> elements built from text nodes:
// a snippet is stored data, shown as text, never as HTML.

import { h, plural, replace, seg, time } from "./dom.js";
import { store } from "./store.js";

const PAGE = 20;
const TERM = /"([^"]*)"|(\S+)/g;

/** The lower-cased terms of a query, as the server reads them ("a phrase" in double quotes). */
export function terms(query) {
  return [...query.matchAll(TERM)].map((m) => (m[1] ?? m[2]).toLowerCase()).filter(Boolean);
}

/** `text` as text nodes, with every occurrence of a term (case ignored) in a <mark>. */
export function marked(text, words) {
  const lower = text.toLowerCase();
  if (lower.length !== text.length) return [text]; // lower case changed the length: no marks
  const spans = [];
  for (const word of words) {
    for (let at = lower.indexOf(word); at >= 0; at = lower.indexOf(word, at + 1)) spans.push([at, at + word.length]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const out = [];
  let done = 0;
  for (const [start, end] of spans) {
    if (end <= done) continue;
    const from = Math.max(start, done);
    if (from > done) out.push(text.slice(done, from));
    out.push(h("mark", {}, text.slice(from, end)));
    done = end;
  }
  if (done < text.length) out.push(text.slice(done));
  return out;
}

/** A link to a conversation, opened at one of its messages. */
export function messageLink(conversationId, messageId) {
  return `#/c/${seg(conversationId)}?m=${seg(messageId)}`;
}

export class SearchView {
  constructor(root, query, me, onError) {
    this.root = root;
    this.query = query;
    this.me = me;
    this.onError = onError;
    this.words = terms(query);
    this.cursor = null;
    this.count = 0;
    this.loading = false;
    this.closed = false;
    this.list = h("ol", { class: "hits", "aria-label": "messages found, newest first" });
    this.status = h("p", { class: "status", role: "status" });
    this.more = h("button", { type: "button", class: "more", hidden: true, onclick: () => this.load() }, "Next page");
    replace(
      this.root,
      h("a", { href: "#/", class: "back" }, "← Conversations"),
      h("h2", { class: "search-heading" }, "Messages matching ", h("q", {}, query)),
      h("div", { class: "scroll hits-scroll" }, this.list, this.status, this.more),
    );
    this.load();
  }

  close() {
    this.closed = true;
  }

  async load() {
    if (this.loading) return;
    this.loading = true;
    this.render();
    try {
      const page = await store().searchMessages({ query: this.query, limit: PAGE, after: this.cursor ?? undefined });
      if (this.closed) return;
      this.list.append(...page.items.map((hit) => this.row(hit)));
      this.count += page.items.length;
      this.cursor = page.nextCursor ?? null;
    } catch (error) {
      if (!this.closed) this.onError(error);
      this.cursor = null;
    } finally {
      this.loading = false;
      if (!this.closed) this.render();
    }
  }

  row(hit) {
    const m = hit.message;
    return h(
      "li",
      { class: "hit", dataset: { conversationId: hit.conversationId, messageId: m.messageId } },
      h(
        "a",
        { href: messageLink(hit.conversationId, m.messageId), class: "hit-link" },
        h(
          "span",
          { class: "conv-facts" },
          h("span", { class: "hit-conv" }, hit.conversationId),
          h("span", { class: `role role-${m.role}` }, m.role),
          time(m.createdAt),
        ),
        h("span", { class: "snippet" }, marked(hit.snippet, this.words)),
      ),
    );
  }

  render() {
    this.more.hidden = this.cursor === null;
    this.more.disabled = this.loading;
    if (this.loading) this.status.textContent = "Searching…";
    else if (this.count === 0) this.status.textContent = "No message matches.";
    else this.status.textContent = `${plural(this.count, "message")} shown${this.cursor ? "; more on the next page" : ", all of them"}`;
  }
}
