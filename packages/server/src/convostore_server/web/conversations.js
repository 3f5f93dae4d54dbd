// The conversation list: newest activity first, a page at a time through the API's cursors
// (more load as the end of the list scrolls into view), filtered by user (admins) and title.

import { h, plural, replace, seg, time } from "./dom.js";
import { store } from "./store.js";
import { frameworkOf, waitingBadge } from "./render.js";

const PAGE = 50;

export class ConversationList {
  constructor(root, me, onError) {
    this.root = root;
    this.me = me;
    this.onError = onError;
    this.userId = "";
    this.title = "";
    this.items = [];
    this.cursor = null;
    this.done = false;
    this.loading = false;
    this.generation = 0;
    this.selected = null;
    this.build();
    this.reset();
  }

  build() {
    const filters = h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() });
    if (this.me.admin) {
      this.userInput = h("input", {
        type: "search",
        id: "filter-user",
        placeholder: "every user",
        autocomplete: "off",
        onchange: () => this.setUser(this.userInput.value.trim()),
      });
      filters.append(h("label", { for: "filter-user" }, "User"), this.userInput);
    }
    this.titleInput = h("input", {
      type: "search",
      id: "filter-title",
      placeholder: "any title",
      autocomplete: "off",
      oninput: () => this.setTitle(this.titleInput.value),
    });
    filters.append(h("label", { for: "filter-title" }, "Title"), this.titleInput);
    this.list = h("ul", { class: "conv-list", "aria-label": "conversations" });
    this.status = h("p", { class: "status", role: "status" });
    this.more = h("button", { type: "button", class: "more", onclick: () => this.loadMore() }, "Load more");
    this.sentinel = h("div", { class: "sentinel", "aria-hidden": "true" });
    this.scroller = h("div", { class: "scroll" }, this.list, this.sentinel, this.status, this.more);
    replace(this.root, h("h2", { class: "pane-title" }, "Conversations"), filters, this.scroller);
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.fill();
    }, { root: this.scroller, rootMargin: "400px 0px" });
    this.observer.observe(this.sentinel);
  }

  setUser(userId) {
    if (userId === this.userId) return;
    this.userId = userId;
    this.reset();
  }

  setTitle(title) {
    this.title = title.trim().toLowerCase();
    this.render();
    this.fill();
  }

  reset() {
    this.generation++;
    this.items = [];
    this.cursor = null;
    this.done = false;
    this.loading = false;
    this.list.replaceChildren();
    this.render();
    this.fill();
  }

  matches(meta) {
    if (!this.title) return true;
    const title = meta.metadata && typeof meta.metadata.title === "string" ? meta.metadata.title : "";
    return title.toLowerCase().includes(this.title);
  }

  /** Load pages while the end of the list is in view (a filter may hide whole pages). */
  async fill() {
    while (!this.done && !this.loading && this.sentinelInView()) {
      const before = this.items.length;
      await this.loadMore();
      if (this.items.length === before) break; // an error, or a filter change
    }
  }

  sentinelInView() {
    if (this.scroller.clientHeight === 0) return false; // hidden (a phone showing a conversation)
    const box = this.scroller.getBoundingClientRect();
    const at = this.sentinel.getBoundingClientRect();
    return at.top <= box.bottom + 400;
  }

  async loadMore() {
    if (this.loading || this.done) return;
    this.loading = true;
    const generation = this.generation;
    this.render();
    try {
      const page = await store().listConversations({
        limit: PAGE,
        order: "desc",
        after: this.cursor ?? undefined,
        userId: this.userId || undefined,
      });
      if (generation !== this.generation) return;
      this.items.push(...page.items);
      this.cursor = page.nextCursor ?? null;
      this.done = !page.nextCursor;
      const shown = page.items.filter((m) => this.matches(m));
      this.list.append(...page.items.map((m) => this.row(m, shown.includes(m))));
    } catch (error) {
      if (generation === this.generation) this.onError(error);
      this.done = true;
    } finally {
      if (generation === this.generation) {
        this.loading = false;
        this.render();
      }
    }
  }

  row(meta, visible) {
    const title = meta.metadata && typeof meta.metadata.title === "string" && meta.metadata.title;
    const framework = frameworkOf(meta);
    const link = h(
      "a",
      { href: `#/c/${seg(meta.conversationId)}`, class: "conv-link" },
      h("span", { class: "conv-title" }, title || meta.conversationId),
      h(
        "span",
        { class: "conv-facts" },
        h("span", { class: `badge fw-${framework.replace(/\W/g, "").toLowerCase()}` }, framework),
        waitingBadge(meta),
        h("span", { class: "count" }, plural(meta.messageCount, "message")),
        time(meta.lastMessageAt),
        this.me.admin && meta.userId ? h("span", { class: "user" }, meta.userId) : null,
      ),
      title ? h("span", { class: "conv-id" }, meta.conversationId) : null,
    );
    const li = h("li", { dataset: { conversationId: meta.conversationId }, hidden: !visible }, link);
    li.meta = meta;
    if (meta.conversationId === this.selected) li.classList.add("selected");
    return li;
  }

  render() {
    for (const li of this.list.children) li.hidden = !this.matches(li.meta);
    const shown = this.items.filter((m) => this.matches(m)).length;
    const loaded = plural(this.items.length, "conversation");
    let text;
    if (this.loading) text = `Loading… (${loaded} so far)`;
    else if (this.title) text = `${shown} of ${loaded} match${this.done ? "" : " (more load as you scroll)"}`;
    else text = this.done ? `${loaded}, all shown` : `${loaded} shown`;
    this.status.textContent = this.items.length === 0 && this.done && !this.loading ? "No conversations." : text;
    this.more.hidden = this.done;
    this.more.disabled = this.loading;
  }

  select(conversationId) {
    this.selected = conversationId;
    for (const li of this.list.children) {
      li.classList.toggle("selected", li.dataset.conversationId === conversationId);
    }
  }

  /** Update a row after a live change (count, last activity, title). */
  update(meta) {
    const index = this.items.findIndex((m) => m.conversationId === meta.conversationId);
    if (index < 0) return;
    this.items[index] = meta;
    const old = [...this.list.children].find((li) => li.dataset.conversationId === meta.conversationId);
    if (old) old.replaceWith(this.row(meta, this.matches(meta)));
  }
}
