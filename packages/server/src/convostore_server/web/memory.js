// Memory stores: the stores, a store's entries as a tree by path, an entry's content and its
// version history, a diff between any two versions, and redaction (admins, after a
// confirmation). A redacted version shows as redacted wherever it appears.

import { bytes, h, plural, replace, seg, time } from "./dom.js";
import { diffLines } from "./diff.js";
import { store } from "./store.js";

const PAGE = 100;

/** The memory stores, a page at a time (oldest first, as the API lists them). */
export class StoreList {
  constructor(root, me, onError) {
    this.root = root;
    this.me = me;
    this.onError = onError;
    this.cursor = null;
    this.done = false;
    this.loading = false;
    this.list = h("ul", { class: "store-list", "aria-label": "memory stores" });
    this.status = h("p", { class: "status", role: "status" });
    this.more = h("button", { type: "button", class: "more", onclick: () => this.load() }, "Load more");
    replace(root, h("h2", { class: "pane-title" }, "Memory stores"), h("div", { class: "scroll" }, this.list, this.status, this.more));
    this.load();
  }

  async load() {
    if (this.loading || this.done) return;
    this.loading = true;
    this.more.disabled = true;
    try {
      const page = await store().listMemoryStores({ limit: PAGE, after: this.cursor ?? undefined });
      this.cursor = page.nextCursor ?? null;
      this.done = !page.nextCursor;
      for (const store of page.items) {
        this.list.append(
          h(
            "li",
            { dataset: { memoryStoreId: store.memoryStoreId } },
            h(
              "a",
              { href: `#/memory/${seg(store.memoryStoreId)}`, class: "conv-link" },
              h("span", { class: "conv-title" }, store.name),
              h(
                "span",
                { class: "conv-facts" },
                h("span", { class: "count" }, plural(store.entryCount, "entry", "entries")),
                h("span", {}, bytes(store.totalSize)),
                time(store.updatedAt),
                this.me.admin && store.userId ? h("span", { class: "user" }, store.userId) : null,
              ),
            ),
          ),
        );
      }
    } catch (error) {
      this.onError(error);
      this.done = true;
    } finally {
      this.loading = false;
      this.more.disabled = false;
      this.more.hidden = this.done;
      const n = this.list.children.length;
      this.status.textContent = n ? `${plural(n, "memory store")}${this.done ? "" : " so far"}` : "No memory stores.";
      this.select(this.selected);
    }
  }

  select(id) {
    this.selected = id;
    for (const li of this.list.children) li.classList.toggle("selected", li.dataset.memoryStoreId === id);
  }
}

/** One store: its entries as a tree by path, and the selected entry. */
export class StoreView {
  constructor(root, storeId, me, onError) {
    this.root = root;
    this.storeId = storeId;
    this.me = me;
    this.onError = onError;
    this.entries = [];
    this.cursor = null;
    this.tree = h("nav", { class: "tree", "aria-label": "entries by path" });
    this.status = h("p", { class: "status", role: "status" });
    this.more = h("button", { type: "button", class: "more", hidden: true, onclick: () => this.loadEntries() }, "Load more entries");
    this.header = h("div", { class: "conv-header" });
    this.entryPane = h("section", { class: "entry", "aria-label": "entry" }, h("p", { class: "note" }, "Choose an entry."));
    replace(
      root,
      h("a", { href: "#/memory", class: "back" }, "← Memory stores"),
      this.header,
      h("div", { class: "store-body" }, h("div", { class: "scroll tree-pane" }, this.tree, this.status, this.more), this.entryPane),
    );
    this.start();
  }

  async start() {
    try {
      const found = await store().getMemoryStore({ memoryStoreId: this.storeId });
      replace(
        this.header,
        h("h2", { class: "conv-heading" }, found.name),
        h(
          "p",
          { class: "conv-facts" },
          h("span", { class: "count" }, plural(found.entryCount, "entry", "entries")),
          h("span", {}, bytes(found.totalSize)),
          h("span", {}, "updated ", time(found.updatedAt)),
          found.userId ? h("span", { class: "user" }, `user ${found.userId}`) : null,
        ),
        found.description ? h("p", { class: "text" }, found.description) : null,
        h("p", { class: "conv-id" }, found.memoryStoreId),
      );
      await this.loadEntries();
    } catch (error) {
      this.onError(error);
    }
  }

  async loadEntries() {
    this.more.disabled = true;
    try {
      // The first pages at once; past 1,000 entries, more on request.
      for (let i = 0; i < 10; i++) {
        const page = await store().listMemories({ memoryStoreId: this.storeId, limit: PAGE, after: this.cursor ?? undefined });
        this.entries.push(...page.items);
        this.cursor = page.nextCursor ?? null;
        if (!this.cursor) break;
      }
    } catch (error) {
      this.onError(error);
      this.cursor = null;
    }
    this.more.disabled = false;
    this.more.hidden = !this.cursor;
    this.status.textContent = this.entries.length ? `${plural(this.entries.length, "entry", "entries")}${this.cursor ? " so far" : ""}` : "No entries.";
    this.renderTree();
  }

  renderTree() {
    const root = { dirs: new Map(), files: [] };
    for (const entry of this.entries) {
      const parts = entry.path.split("/");
      let node = root;
      for (const dir of parts.slice(0, -1)) {
        if (!node.dirs.has(dir)) node.dirs.set(dir, { dirs: new Map(), files: [] });
        node = node.dirs.get(dir);
      }
      node.files.push({ name: parts.at(-1), entry });
    }
    const build = (node, depth) =>
      h(
        "ul",
        { role: depth === 0 ? "tree" : "group" },
        [...node.dirs.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, child]) =>
            h("li", {}, h("details", { open: depth < 2 }, h("summary", { class: "dir" }, `${name}/`), build(child, depth + 1))),
          ),
        node.files
          .sort((a, b) => a.name.localeCompare(b.name))
          .map(({ name, entry }) =>
            h(
              "li",
              { dataset: { entryId: entry.entryId } },
              h("a", { href: `#/memory/${seg(this.storeId)}/${seg(entry.entryId)}`, class: "file", title: entry.path }, name),
              entry.redacted ? h("span", { class: "badge redacted" }, "redacted") : null,
            ),
          ),
      );
    replace(this.tree, build(root, 0));
    this.markSelected();
  }

  markSelected() {
    for (const li of this.tree.querySelectorAll("li[data-entry-id]")) {
      const on = li.dataset.entryId === this.entryId;
      li.classList.toggle("selected", on);
      if (on) for (let d = li.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
    }
  }

  showEntry(entryId) {
    this.entryId = entryId;
    this.markSelected();
    if (entryId === undefined) {
      replace(this.entryPane, h("p", { class: "note" }, "Choose an entry."));
      return;
    }
    this.entryView = new EntryView(this.entryPane, this.storeId, entryId, this.me, this.onError, () => this.refreshEntry(entryId));
  }

  /** After a redaction: the tree's badge. */
  async refreshEntry(entryId) {
    try {
      const entry = await store().getMemory({ memoryStoreId: this.storeId, entryId });
      const index = this.entries.findIndex((e) => e.entryId === entryId);
      if (index >= 0) this.entries[index] = { ...entry, content: null };
      this.renderTree();
    } catch (error) {
      this.onError(error);
    }
  }
}

/** An entry: its current content, its versions, a diff of two, redaction. */
class EntryView {
  constructor(root, storeId, entryId, me, onError, onRedacted) {
    this.root = root;
    this.storeId = storeId;
    this.entryId = entryId;
    this.me = me;
    this.onError = onError;
    this.onRedacted = onRedacted;
    this.contents = new Map(); // version id -> version with content
    replace(root, h("p", { class: "status" }, "Loading…"));
    this.load();
  }

  async load() {
    try {
      const [entry, versions] = await Promise.all([
        store().getMemory({ memoryStoreId: this.storeId, entryId: this.entryId }),
        this.allVersions(),
      ]);
      this.entry = entry;
      this.versions = versions;
      this.render();
    } catch (error) {
      this.onError(error);
      replace(this.root, h("p", { class: "note" }, "This entry could not be read."));
    }
  }

  async allVersions() {
    const items = [];
    let after;
    do {
      const page = await store().listMemoryVersions({ memoryStoreId: this.storeId, entryId: this.entryId, limit: PAGE, after });
      items.push(...page.items);
      after = page.nextCursor;
    } while (after);
    return items;
  }

  render() {
    const entry = this.entry;
    this.content = h("div", { class: "version-content" });
    this.showContent(`current content (version ${entry.version})`, entry);
    const options = () => this.versions.map((v) => h("option", { value: v.versionId }, label(v)));
    this.fromSelect = h("select", { id: "diff-from" }, options());
    this.toSelect = h("select", { id: "diff-to" }, options());
    const n = this.versions.length;
    this.fromSelect.selectedIndex = Math.max(0, n - 2);
    this.toSelect.selectedIndex = Math.max(0, n - 1);
    this.diffOut = h("div", { class: "diff-out", role: "region", "aria-label": "diff" });
    replace(
      this.root,
      h("h3", { class: "entry-path" }, entry.path),
      h(
        "p",
        { class: "conv-facts" },
        h("span", {}, `version ${entry.version}`),
        h("span", {}, bytes(entry.size)),
        h("span", {}, "updated ", time(entry.updatedAt)),
        h("span", { class: "conv-id" }, entry.entryId),
      ),
      this.content,
      h("h4", {}, "Versions"),
      h(
        "table",
        { class: "versions" },
        h("thead", {}, h("tr", {}, h("th", {}, "version"), h("th", {}, "operation"), h("th", {}, "when"), h("th", {}, "size"), h("th", {}, "content"), h("th", {}, ""))),
        h("tbody", {}, this.versions.map((v) => this.versionRow(v))),
      ),
      h("h4", {}, "Compare two versions"),
      h(
        "form",
        { class: "diff-form", onsubmit: (e) => { e.preventDefault(); this.showDiff(); } },
        h("label", { for: "diff-from" }, "from"),
        this.fromSelect,
        h("label", { for: "diff-to" }, "to"),
        this.toSelect,
        h("button", { type: "submit" }, "Show diff"),
      ),
      this.diffOut,
    );
  }

  showContent(caption, holder) {
    let body;
    if (holder.redacted) body = h("p", { class: "badge redacted" }, "redacted: this version's content was erased");
    else if (holder.operation === "delete") body = h("p", { class: "note" }, "deleted: no content");
    else body = h("pre", { class: "text" }, holder.content ?? "");
    replace(this.content, h("div", { class: "tool-label" }, caption), body);
  }

  versionRow(v) {
    const actions = [
      h("button", { type: "button", onclick: () => this.view(v) }, "View"),
    ];
    if (this.me.admin && !v.redacted && v.operation !== "delete") {
      actions.push(h("button", { type: "button", class: "danger", onclick: () => this.redact(v) }, "Redact…"));
    }
    return h(
      "tr",
      { dataset: { versionId: v.versionId }, class: v.redacted ? "is-redacted" : "" },
      h("td", {}, String(v.version)),
      h("td", {}, v.operation),
      h("td", {}, time(v.createdAt)),
      h("td", {}, bytes(v.size)),
      h("td", {}, v.redacted ? h("span", { class: "badge redacted" }, "redacted") : v.operation === "delete" ? "—" : "kept"),
      h("td", { class: "actions" }, actions),
    );
  }

  async version(v) {
    if (!this.contents.has(v.versionId)) {
      this.contents.set(v.versionId, await store().getMemoryVersion({ memoryStoreId: this.storeId, versionId: v.versionId }));
    }
    return this.contents.get(v.versionId);
  }

  async view(v) {
    try {
      this.showContent(`version ${v.version} (${v.operation})`, await this.version(v));
      this.content.scrollIntoView({ block: "nearest" });
    } catch (error) {
      this.onError(error);
    }
  }

  async showDiff() {
    const a = this.versions[this.fromSelect.selectedIndex];
    const b = this.versions[this.toSelect.selectedIndex];
    try {
      const [x, y] = await Promise.all([this.version(a), this.version(b)]);
      const missing = [x, y].filter((v) => v.redacted || v.operation === "delete");
      if (missing.length) {
        replace(
          this.diffOut,
          missing.map((v) =>
            h("p", { class: v.redacted ? "badge redacted" : "note" }, `version ${v.version} is ${v.redacted ? "redacted" : "a deletion"}: it has no content to compare`),
          ),
        );
        return;
      }
      const lines = diffLines(x.content ?? "", y.content ?? "");
      const added = lines.filter((l) => l.op === "+").length;
      const removed = lines.filter((l) => l.op === "-").length;
      replace(
        this.diffOut,
        h("p", { class: "note" }, `version ${a.version} → ${b.version}: ${added} line${added === 1 ? "" : "s"} added, ${removed} removed`),
        h(
          "pre",
          { class: "diff" },
          lines.map((l) => h("span", { class: { "+": "add", "-": "del", " ": "same" }[l.op] }, `${l.op} ${l.text}\n`)),
        ),
      );
    } catch (error) {
      this.onError(error);
    }
  }

  async redact(v) {
    const ok = await confirmDialog(
      `Redact version ${v.version} of ${this.entry.path}? Its content is erased for good; its metadata stays.`,
      "Redact",
    );
    if (!ok) return;
    try {
      await store().redactMemoryVersion({ memoryStoreId: this.storeId, versionId: v.versionId });
      this.contents.delete(v.versionId);
      await this.load();
      this.onRedacted();
    } catch (error) {
      this.onError(error);
    }
  }
}

function label(v) {
  return `v${v.version} ${v.operation}${v.redacted ? " (redacted)" : ""}`;
}

/** A modal confirmation (the <dialog> of the page): true if confirmed. */
export function confirmDialog(text, action) {
  const dialog = document.getElementById("confirm");
  dialog.querySelector(".confirm-text").textContent = text;
  dialog.querySelector(".confirm-ok").textContent = action;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}
