// One conversation: its metadata (title, summary), then its messages. It opens at the newest
// page (order=desc) and loads older pages as the top scrolls into view (the `before` cursor),
// so a conversation of any length opens with one page. New messages, edits and deletions
// arrive live through the conversation's event stream.

import { h, jsonBlock, plural, replace, time } from "./dom.js";
import { frameworkOf, waitingBadge, messageElement, Pairing } from "./render.js";
import { ConversationNotFoundError, store } from "./store.js";

const PAGE = 50;

export class ConversationView {
  constructor(root, conversationId, { onError, onMeta }) {
    this.root = root;
    this.id = conversationId;
    this.onError = onError;
    this.onMeta = onMeta;
    this.pairing = new Pairing();
    this.elements = new Map(); // message id -> <article>
    this.oldest = null;
    this.hasOlder = true;
    this.loading = false;
    this.closed = false;
    this.pending = []; // events that came before the first page was on screen
    this.target = null; // a message to scroll to and highlight once it is loaded
    this.build();
    this.start();
  }

  build() {
    this.header = h("div", { class: "conv-header" });
    this.liveState = h("span", { class: "live", role: "status" }, "connecting…");
    this.olderButton = h("button", { type: "button", class: "more", onclick: () => this.loadOlder() }, "Load older messages");
    this.topStatus = h("p", { class: "status" });
    this.sentinel = h("div", { class: "sentinel", "aria-hidden": "true" });
    this.list = h("div", { class: "messages-list" });
    this.newBelow = h("button", { type: "button", class: "new-below", hidden: true, onclick: () => this.scrollToEnd() }, "New messages ↓");
    this.scroller = h(
      "div",
      { class: "messages scroll", tabindex: "0", "aria-label": "messages, oldest at the top" },
      this.sentinel,
      this.topStatus,
      this.olderButton,
      this.list,
    );
    this.scroller.addEventListener("scroll", () => {
      if (this.atEnd()) this.newBelow.hidden = true;
    });
    replace(
      this.root,
      h("a", { href: "#/", class: "back" }, "← Conversations"),
      this.header,
      this.scroller,
      this.newBelow,
    );
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.fillUp();
    }, { root: this.scroller, rootMargin: "300px 0px" });
  }

  async start() {
    try {
      await this.loadMeta();
      // Subscribe first, then read the newest page: what is written in between arrives as
      // events (and is recognised by its id), so nothing falls in a gap.
      await this.follow();
      if (this.closed) return;
      const page = await this.messages({ limit: PAGE, order: "desc" });
      if (this.closed) return;
      this.hasOlder = page.previousCursor !== undefined;
      this.insert(page.items.reverse(), "end");
      for (const event of this.pending.splice(0)) this.apply(event);
      this.pending = null;
      this.scrollToEnd();
      this.renderTop();
      this.seek();
      this.observer.observe(this.sentinel);
    } catch (error) {
      if (!this.closed) this.onError(error);
    }
  }

  /** Read the conversation's events (the client's `events()`, which reconnects with
   * Last-Event-ID for as long as the view is open); settles once the server has taken the
   * subscription, or refused it (the error). */
  follow() {
    this.stop = new AbortController();
    let lives = 0;
    return new Promise((opened, refused) => {
      const onState = (state) => {
        if (state === "live" && lives++ === 0) opened();
        this.onState(state, null, lives > 1);
      };
      (async () => {
        const events = store().events({
          conversationId: this.id,
          signal: this.stop.signal,
          maxRetries: Infinity, // a view left open waits for the server as long as it takes
          onState,
        });
        try {
          for await (const event of events) this.onEvent(event);
          opened(); // ended by close()
        } catch (error) {
          refused(error);
          this.onState("closed", error);
        }
      })();
    });
  }

  close() {
    this.closed = true;
    this.stop?.abort();
    this.observer.disconnect();
    clearTimeout(this.metaTimer);
  }

  /** A page of the conversation's messages, with its cursors. */
  messages(page) {
    return store().getMessagesPage({ conversationId: this.id, ...page });
  }

  async loadMeta() {
    const meta = await store().getConversation({ conversationId: this.id });
    if (this.closed) return;
    if (meta === null) throw new ConversationNotFoundError(`conversation ${JSON.stringify(this.id)} not found`);
    this.meta = meta;
    this.renderHeader();
    this.onMeta?.(meta);
  }

  renderHeader() {
    const meta = this.meta;
    const md = meta.metadata || {};
    const title = typeof md.title === "string" && md.title ? md.title : null;
    const framework = frameworkOf(meta);
    replace(
      this.header,
      h("h2", { class: "conv-heading" }, title ?? meta.conversationId),
      h(
        "p",
        { class: "conv-facts" },
        h("span", { class: `badge fw-${framework.replace(/\W/g, "").toLowerCase()}` }, framework),
        waitingBadge(meta),
        h("span", { class: "count" }, plural(meta.messageCount, "message")),
        h("span", {}, "last activity ", time(meta.lastMessageAt)),
        h("span", {}, "created ", time(meta.createdAt)),
        meta.userId ? h("span", { class: "user" }, `user ${meta.userId}`) : h("span", { class: "note" }, "no user"),
        this.liveState,
      ),
      title ? h("p", { class: "conv-id" }, meta.conversationId) : null,
      typeof md.summary === "string" && md.summary
        ? h("details", { class: "summary", open: true }, h("summary", {}, "Summary"), h("div", { class: "text" }, md.summary))
        : null,
      Object.keys(md).length ? jsonBlock("Conversation metadata", md, { cls: "json meta" }) : null,
    );
  }

  onState(state, error, reconnected) {
    if (this.closed) return;
    if (state === "live" && reconnected) this.resync();
    this.liveState.textContent = { live: "● live", reconnecting: "reconnecting…", closed: "not live" }[state];
    this.liveState.className = `live ${state}`;
    if (state === "closed" && error && error.status !== 404) this.onError(error);
  }

  onEvent(event) {
    if (this.closed) return;
    if (this.pending) this.pending.push(event);
    else this.apply(event);
  }

  apply(event) {
    const { kind } = event;
    if (kind === "message.created" || kind === "message.updated") {
      const message = event.message;
      if (!message) return; // deleted since
      const old = this.elements.get(message.messageId);
      if (old) {
        const el = messageElement(message, this.pairing);
        old.replaceWith(el);
        this.elements.set(message.messageId, el);
      } else if (kind === "message.created") {
        const follow = this.atEnd();
        this.insert([message], "end");
        if (follow) this.scrollToEnd();
        else this.newBelow.hidden = false;
      }
    } else if (kind === "message.deleted") {
      this.elements.get(event.messageId)?.remove();
      this.elements.delete(event.messageId);
    } else if (kind === "messages.cleared") {
      this.list.replaceChildren();
      this.elements.clear();
      this.pairing = new Pairing();
      this.hasOlder = false;
      this.oldest = null;
      this.renderTop();
    } else if (kind === "conversation.deleted") {
      this.list.replaceChildren(h("p", { class: "note" }, "This conversation was deleted."));
      this.elements.clear();
      this.hasOlder = false;
      this.renderTop();
      return;
    }
    this.refreshMeta();
  }

  /** After a reconnection: re-read the newest page, for what the stream may not replay (a
   * stream that had received no event id yet resumes from now). */
  async resync() {
    try {
      const newest = await this.messages({ limit: PAGE, order: "desc" });
      if (this.closed || this.pending) return;
      const page = newest.items.reverse();
      const ids = new Set(page.map((m) => m.messageId));
      // Gone from the newest page's range: deleted while away.
      if (page.length) {
        const oldest = this.elements.get(page[0].messageId);
        for (const [id, el] of this.elements) {
          if (!ids.has(id) && oldest && (oldest.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)) {
            el.remove();
            this.elements.delete(id);
          }
        }
      }
      for (const message of page) {
        const old = this.elements.get(message.messageId);
        if (old) {
          const el = messageElement(message, this.pairing);
          old.replaceWith(el);
          this.elements.set(message.messageId, el);
        }
      }
      const follow = this.atEnd();
      this.insert(page.filter((m) => !this.elements.has(m.messageId)), "end");
      if (follow) this.scrollToEnd();
      this.refreshMeta();
    } catch (error) {
      if (!this.closed) this.onError(error);
    }
  }

  /** Re-read the conversation's metadata and counters once a burst of events has passed. */
  refreshMeta() {
    clearTimeout(this.metaTimer);
    this.metaTimer = setTimeout(() => this.loadMeta().catch(() => {}), 300);
  }

  /** Add messages (in chronological order) at the start or the end of the list. */
  insert(messages, where) {
    const fresh = messages.filter((m) => !this.elements.has(m.messageId));
    const nodes = fresh.map((m) => {
      const el = messageElement(m, this.pairing);
      this.elements.set(m.messageId, el);
      return el;
    });
    if (where === "end") this.list.append(...nodes);
    else this.list.prepend(...nodes);
    if (where === "start" || this.oldest === null) {
      if (messages.length) this.oldest = messages[0].messageId;
    }
  }

  async loadOlder() {
    if (this.loading || !this.hasOlder || this.oldest === null) return;
    this.loading = true;
    this.renderTop();
    try {
      const page = await this.messages({ limit: PAGE, order: "desc", before: this.oldest });
      if (this.closed) return;
      this.hasOlder = page.previousCursor !== undefined;
      // Keep what is on screen where it is while the page grows above it.
      const fromBottom = this.scroller.scrollHeight - this.scroller.scrollTop;
      this.insert(page.items.reverse(), "start");
      this.scroller.scrollTop = this.scroller.scrollHeight - fromBottom;
    } catch (error) {
      if (!this.closed) this.onError(error);
      this.hasOlder = false;
    } finally {
      this.loading = false;
      this.renderTop();
      this.seek();
    }
  }

  /** Scroll to message `messageId` and highlight it (a search hit), loading older pages
   * until it is there. */
  focus(messageId) {
    this.target = messageId;
    this.seek();
  }

  seek() {
    if (this.target === null || this.pending || this.closed) return;
    const el = this.elements.get(this.target);
    if (el) {
      this.target = null;
      for (const old of this.list.querySelectorAll(".hit-target")) old.classList.remove("hit-target");
      el.classList.add("hit-target");
      el.scrollIntoView({ block: "center" });
    } else if (!this.hasOlder) {
      this.target = null; // not in the conversation (deleted since)
    } else if (!this.loading) {
      this.loadOlder();
    }
  }

  /** Load older pages while the top is in view (a short page does not fill the screen). */
  async fillUp() {
    while (!this.closed && this.hasOlder && !this.loading && this.topInView()) {
      await this.loadOlder();
    }
  }

  topInView() {
    if (this.scroller.clientHeight === 0) return false; // hidden
    return this.sentinel.getBoundingClientRect().bottom >= this.scroller.getBoundingClientRect().top - 300;
  }

  renderTop() {
    this.olderButton.hidden = !this.hasOlder;
    this.olderButton.disabled = this.loading;
    const count = this.elements.size;
    this.topStatus.textContent = this.loading
      ? "Loading older messages…"
      : this.hasOlder
        ? `${plural(count, "message")} loaded; older ones load as you scroll up`
        : count
          ? "The start of the conversation."
          : "No messages.";
  }

  atEnd() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 40;
  }

  scrollToEnd() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.newBelow.hidden = true;
  }
}
