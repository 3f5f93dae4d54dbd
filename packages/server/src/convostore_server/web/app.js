// The web view of a convostore server: sign in with a token, then browse conversations and
// memory stores, and search messages. Routes live in the URL's fragment: #/, #/c/<id>[?m=<message id>],
// #/search/<query>, #/memory, #/memory/<id>[/<entry>].

import { describe, refusedToken, store, token } from "./store.js";
import { h, replace } from "./dom.js";
import { ConversationList } from "./conversations.js";
import { ConversationView } from "./conversation.js";
import { StoreList, StoreView } from "./memory.js";
import { SearchView } from "./search.js";

const $ = (id) => document.getElementById(id);
let me = null;
let side = null; // {kind, view}
let detail = null; // {kind, key, view}

function showError(error) {
  if (refusedToken(error)) return signOut("Your token was refused: sign in again.");
  $("alert-text").textContent = describe(error);
  $("alert").hidden = false;
}

function signOut(message = "") {
  token.clear();
  me = null;
  closeDetail();
  side = null;
  $("app").hidden = true;
  $("signout").hidden = true;
  document.querySelector(".tabs").hidden = true;
  $("search-form").hidden = true;
  $("who").textContent = "";
  $("login").hidden = false;
  $("login-error").textContent = message;
  $("token").value = "";
  $("token").focus();
}

async function signIn() {
  try {
    me = await store().me();
  } catch (error) {
    token.clear();
    signOut(refusedToken(error) ? "That token is not valid here." : describe(error));
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("signout").hidden = false;
  document.querySelector(".tabs").hidden = false;
  $("search-form").hidden = false;
  $("who").textContent = me.admin ? "admin" : `user ${me.userId}`;
  route();
}

function closeDetail() {
  detail?.view?.close?.();
  detail = null;
}

function parse() {
  const [path, query = ""] = window.location.hash.replace(/^#\/?/, "").split(/\?(.*)/s);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "c" && parts.length > 1) {
    const message = new URLSearchParams(query).get("m");
    return { tab: "conversations", conversation: parts.slice(1).join("/"), message };
  }
  if (parts[0] === "search" && parts.length > 1) return { tab: "conversations", search: parts.slice(1).join("/") };
  if (parts[0] === "memory") return { tab: "memory", store: parts[1], entry: parts[2] };
  return { tab: "conversations" };
}

function route() {
  if (!me) return;
  const where = parse();
  for (const a of document.querySelectorAll(".tabs a")) {
    a.toggleAttribute("aria-current", a.dataset.tab === where.tab);
  }
  if (where.tab === "conversations") {
    if (side?.kind !== "conversations") {
      side = { kind: "conversations", view: new ConversationList($("side"), me, showError) };
    }
    side.view.select(where.conversation ?? null);
    if (where.search !== undefined) {
      if (detail?.key !== `s:${where.search}`) {
        closeDetail();
        $("search").value = where.search;
        detail = { kind: "search", key: `s:${where.search}`, view: new SearchView($("detail"), where.search, me, showError) };
      }
    } else if (where.conversation === undefined) {
      closeDetail();
      replace($("detail"), h("p", { class: "empty" }, "Choose a conversation."));
    } else if (detail?.key !== `c:${where.conversation}`) {
      closeDetail();
      const view = new ConversationView($("detail"), where.conversation, {
        onError: showError,
        onMeta: (meta) => side?.kind === "conversations" && side.view.update(meta),
      });
      detail = { kind: "conversation", key: `c:${where.conversation}`, view };
    }
    if (where.message) detail.view.focus(where.message);
    const listed = where.conversation === undefined && where.search === undefined;
    document.body.dataset.pane = listed ? "list" : "detail";
  } else {
    if (side?.kind !== "memory") side = { kind: "memory", view: new StoreList($("side"), me, showError) };
    side.view.select(where.store ?? null);
    if (where.store === undefined) {
      closeDetail();
      replace($("detail"), h("p", { class: "empty" }, "Choose a memory store."));
    } else {
      if (detail?.key !== `m:${where.store}`) {
        closeDetail();
        detail = { kind: "store", key: `m:${where.store}`, view: new StoreView($("detail"), where.store, me, showError) };
      }
      if (detail.view.entryId !== where.entry) detail.view.showEntry(where.entry);
    }
    document.body.dataset.pane = where.store === undefined ? "list" : "detail";
  }
}

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("token").value.trim();
  if (!value) return;
  token.set(value);
  signIn();
});
$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const query = $("search").value.trim();
  if (query) window.location.hash = `#/search/${encodeURIComponent(query)}`;
});
$("signout").addEventListener("click", () => signOut());
$("alert-close").addEventListener("click", () => {
  $("alert").hidden = true;
});
window.addEventListener("hashchange", () => {
  $("alert").hidden = true;
  route();
});
window.addEventListener("convostore:unauthenticated", () => signOut("Your token was refused: sign in again."));

if (token.get()) signIn();
else signOut();
