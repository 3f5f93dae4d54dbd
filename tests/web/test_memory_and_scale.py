"""Memory stores in the browser (the tree, an entry's versions, a diff, redaction by an admin
after a confirmation, shown everywhere), a 10,000-message conversation opened one page at a
time, and the page at a phone's width."""

from __future__ import annotations

from urllib.parse import quote

from conftest import OpenPage, count, screenshot, scroll_until
from convostore import ConversationStore
from playwright.sync_api import expect
from served import Server, new_id
from writers import crewai_run


def _notes(server: Server, user: str) -> tuple[str, str, str]:
    """A memory store of ``user`` with three entries, one of them updated once: its id, the
    updated entry's id and the page's address of that entry."""
    with ConversationStore(server.store_url) as store:
        sid = store.create_memory_store(new_id("notes"), user_id=user).memory_store_id
        first = "deploys: friday\nowner: ann\n"
        daily = store.create_memory(sid, "notes/2026/05/daily.md", first, user_id=user)
        second = "deploys: monday\nowner: ann\nsecret: hunter2\n"
        store.update_memory(sid, daily.entry_id, second, 1, user_id=user)
        store.create_memory(sid, "notes/2026/05/weekly.md", "weekly", user_id=user)
        store.create_memory(sid, "readme.md", "top <b>level</b>", user_id=user)
    eid = daily.entry_id
    return sid, eid, f"#/memory/{quote(sid, safe='')}/{quote(eid, safe='')}"


def test_memory_entries_as_a_tree_with_versions_and_a_diff(
    server: Server, open_page: OpenPage
) -> None:
    _, _, entry_link = _notes(server, "bob")
    page = open_page("bob", entry_link).page
    expect(page.locator(".versions tbody tr")).to_have_count(2)
    expect(page.locator(".tree a.file")).to_have_count(3)  # the tree loads on its own
    tree = page.locator(".tree").inner_text()
    assert [line.strip() for line in tree.splitlines() if line.strip()] == [
        "notes/", "2026/", "05/", "daily.md", "weekly.md", "readme.md"
    ]  # fmt: skip
    expect(page.locator(".version-content")).to_contain_text("secret: hunter2")
    assert page.locator("button", has_text="Redact").count() == 0  # the owner is no admin
    page.click(".diff-form button")
    diff = page.locator("pre.diff")
    expect(diff.locator(".del")).to_have_text(["- deploys: friday"])
    expect(diff.locator(".add")).to_have_text(["+ deploys: monday", "+ secret: hunter2"])
    screenshot(page, server, "memory-entry")
    page.locator(".tree a", has_text="readme.md").click()
    expect(page.locator(".entry-path")).to_have_text("readme.md")
    expect(page.locator(".version-content pre")).to_have_text("top <b>level</b>")


def test_an_admin_redacts_after_a_confirmation_and_it_shows_everywhere(
    server: Server, open_page: OpenPage
) -> None:
    sid, eid, entry_link = _notes(server, "bob")
    admin = open_page("admin", entry_link).page
    row = admin.locator(".versions tbody tr").nth(1)
    row.wait_for()
    row.locator("button", has_text="Redact").click()
    dialog = admin.locator("dialog#confirm")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Redact version 2 of notes/2026/05/daily.md?")
    admin.keyboard.press("Escape")  # Cancel has the focus; Escape closes as well
    expect(dialog).to_be_hidden()
    expect(row).to_contain_text("kept")
    row.locator("button", has_text="Redact").click()
    dialog.locator("button", has_text="Redact").click()
    row = admin.locator(".versions tbody tr").nth(1)
    expect(row.locator(".badge.redacted")).to_be_visible()
    # Redacted everywhere: the current content, the version, the tree, the diff.
    expect(admin.locator(".version-content")).to_contain_text("redacted")
    expect(admin.locator(".tree li[data-entry-id] .badge.redacted")).to_have_count(1)
    assert "hunter2" not in admin.locator("#detail").inner_text()
    row.locator("button", has_text="View").click()
    expect(admin.locator(".version-content")).to_contain_text("version 2 (update)redacted")
    admin.click(".diff-form button")
    expect(admin.locator(".diff-out")).to_contain_text("version 2 is redacted")
    expect(admin.locator("#diff-to")).to_contain_text("(redacted)")
    screenshot(admin, server, "memory-redacted")
    with ConversationStore(server.store_url) as store:
        versions = store.list_memory_versions(sid, entry_id=eid).items
        assert [v.redacted for v in versions] == [False, True]

    # The owner's page shows it redacted too.
    page = open_page("bob", entry_link).page
    expect(page.locator(".versions .badge.redacted")).to_have_count(1)
    expect(page.locator(".version-content")).to_contain_text("redacted")
    assert "hunter2" not in page.locator("#detail").inner_text()


def test_ten_thousand_messages_open_one_page_at_a_time(server: Server, open_page: OpenPage) -> None:
    user = "alice"
    cid = new_id("long")
    with ConversationStore(server.store_url) as store:
        for start in range(0, 10_000, 1_000):
            store.append_messages(
                conversation_id=cid,
                user_id=user,
                messages=[
                    {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}
                    for i in range(start, start + 1_000)
                ],
            )
    opened = open_page(user, f"#/c/{quote(cid, safe='')}")
    page = opened.page
    page.wait_for_selector(".msg")
    page.wait_for_selector(".live.live")
    assert page.locator("#detail .count").inner_text() == "10,000 messages"
    assert count(page, ".msg") == 50
    texts = page.locator(".msg .parts").all_inner_texts()
    assert texts == [f"message {i}" for i in range(9_950, 10_000)]
    message_reads = [u for u in opened.requests if "/messages" in u]
    assert len(message_reads) == 1 and "order=desc" in message_reads[0]
    assert page.locator(".msg").last.is_visible()  # opened at the newest
    screenshot(page, server, "conversation-10000")

    scroll_until(page, ".messages", "document.querySelectorAll('.msg').length >= 100", to="top")
    texts = page.locator(".msg .parts").all_inner_texts()
    assert texts[: len(texts) - 50] == [f"message {i}" for i in range(10_000 - len(texts), 9_950)]
    assert "before=" in [u for u in opened.requests if "/messages" in u][1]


def test_the_page_at_a_phone_width(server: Server, open_page: OpenPage) -> None:
    user = "hal"
    cid = new_id("phone")
    with ConversationStore(server.store_url) as store:
        for i in range(59):
            store.append_message(
                conversation_id=new_id(f"older{i}"), user_id=user, role="user", content="hi"
            )
        crewai_run(store, cid, user)
    # Opened at a conversation: the list behind it (hidden) reads one page, not every page.
    opened = open_page(user, f"#/c/{quote(cid, safe='')}", width=390, height=800)
    page = opened.page
    page.wait_for_selector(".msg")
    overflow = "() => document.documentElement.scrollWidth <= window.innerWidth"
    assert page.locator("#side").is_hidden()
    assert page.evaluate(overflow)
    screenshot(page, server, "phone-conversation")
    page.locator("a.back").click()
    expect(page.locator(".side .status")).to_have_text("50 conversations shown")
    assert page.locator("#detail").is_hidden()
    assert page.evaluate(overflow)
    assert len([u for u in opened.requests if u.split("?")[0].endswith("/conversations")]) == 1
    screenshot(page, server, "phone-list")
    page.locator(".conv-list li a").first.click()
    page.wait_for_selector(".msg")
