"""Conversations in the browser: the list (every framework, paging to the last, filters), one
conversation (tool calls paired, images, metadata, summary), live updates from another
process, data shown as text, and one user never seeing another's conversations."""

from __future__ import annotations

from urllib.parse import quote

from conftest import OpenPage, count, screenshot, scroll_until
from convostore import ConversationStore
from playwright.sync_api import expect
from served import BIN, Server, new_id, spawn, stop
from writers import claude_session, core_chat, crewai_run, langgraph_thread, openai_session


def link(cid: str) -> str:
    return f"#/c/{quote(cid, safe='')}"


def listing(server: Server, user: str) -> list[str]:
    """Every conversation of ``user``, in the order the API lists them."""
    ids: list[str] = []
    with ConversationStore(server.store_url) as store:
        after = None
        while True:
            page = store.list_conversations(user_id=user, limit=100, after=after)
            ids += [c.conversation_id for c in page.items]
            if not (after := page.next_cursor):
                return ids


def test_the_list_shows_each_framework_and_pages_to_the_last(
    server: Server, open_page: OpenPage
) -> None:
    user = "carol"
    with ConversationStore(server.store_url) as store:
        first = new_id("first")
        core_chat(store, first, user)
        store.update_conversation(
            conversation_id=first, user_id=user, metadata={"title": "The very first one"}
        )
        for i in range(120):
            core_chat(store, new_id(f"c{i:03d}"), user)
        openai_id, crew_id = new_id("oa"), new_id("crew")
        openai_session(store, openai_id, user)
        crewai_run(store, crew_id, user)
    claude_id = claude_session(server.store_url, user, new_id("session"))
    expected = listing(server, user)  # the API's order: newest activity first
    total = len(expected)
    assert total == 124

    page = open_page(user).page
    rows = ".conv-list li"
    page.wait_for_selector(rows)
    assert count(page, rows) == 50  # one page, newest activity first
    shown = page.locator(rows).evaluate_all("els => els.map(e => e.dataset.conversationId)")
    assert shown == expected[:50]
    badge = ".badge"
    facts = {
        cid: page.locator(f'{rows}[data-conversation-id="{cid}"] {badge}').inner_text()
        for cid in (claude_id, crew_id, openai_id)
    }
    assert facts == {claude_id: "Claude", crew_id: "CrewAI", openai_id: "OpenAI Agents"}
    crew_row = page.locator(f'{rows}[data-conversation-id="{crew_id}"]').inner_text()
    assert "4 messages" in crew_row
    screenshot(page, server, "conversation-list")

    scroll_until(page, ".side .scroll", f"document.querySelectorAll('{rows}').length === {total}")
    page.wait_for_function(
        "() => document.querySelector('.side .status').textContent.includes('all')"
    )
    shown = page.locator(rows).evaluate_all("els => els.map(e => e.dataset.conversationId)")
    assert shown == expected
    first_row = page.locator(f'{rows}[data-conversation-id="{first}"]').inner_text()
    assert "The very first one" in first_row and "core" in first_row

    # The title filter; then the keyboard opens a conversation.
    page.fill("#filter-title", "very FIRST")
    assert page.locator(f"{rows}:visible").count() == 1
    page.locator(f"{rows}:visible a").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg")
    assert page.evaluate("location.hash") == link(first)
    assert page.locator(".conv-heading").inner_text() == "The very first one"


def test_a_conversation_shows_its_tool_calls_paired(server: Server, open_page: OpenPage) -> None:
    user = "dan"
    claude_id = claude_session(server.store_url, user, new_id("paired"))
    openai_id, crew_id = new_id("oa"), new_id("crew")
    with ConversationStore(server.store_url) as store:
        openai_session(store, openai_id, user)
        crewai_run(store, crew_id, user)
        store.update_conversation(
            conversation_id=crew_id,
            user_id=user,
            metadata={"title": "Capitals", "summary": "The crew looked up the capital of France."},
        )
    opened = open_page(user, link(claude_id))
    page = opened.page

    # Claude: a tool_use block and the tool_result in the next entry; an image block.
    call = page.locator('details.tool-call[data-call-id="toolu_read_1"]')
    call.wait_for()
    assert "paired" in (call.get_attribute("class") or "")
    call.locator("summary").focus()
    page.keyboard.press("Enter")  # opens by keyboard
    assert call.evaluate("el => el.open") is True
    text = call.inner_text()
    assert "Read" in text and '"file_path": "README.md"' in text
    assert "# Demo\nInstall with pip." in text
    result = page.locator('.tool-result[data-result-for="toolu_read_1"]')
    assert "shown with its call" in result.inner_text()
    image = page.locator("img.image")
    assert image.get_attribute("src", timeout=5000).startswith("data:image/png;base64,")  # type: ignore[union-attr]
    page.wait_for_function("() => document.querySelector('img.image').naturalWidth === 1")
    assert page.locator("#detail .conv-facts .badge").inner_text() == "Claude"
    screenshot(page, server, "conversation-claude")

    # OpenAI Agents: function_call and function_call_output items; reasoning collapsed.
    page.evaluate(f"location.hash = {link(openai_id)!r}")
    call = page.locator('details.tool-call[data-call-id="call_oslo"]')
    call.wait_for()
    call.locator("summary").click()
    text = call.inner_text()
    assert "get_weather" in text and '"city": "Oslo"' in text and "Cold, -3C" in text
    assert page.locator("details.aside summary").first.inner_text() == "reasoning"
    assert "It is cold in Oslo." in page.locator(".messages-list").inner_text()
    assert [r.inner_text() for r in page.locator(".msg .role").all()] == [
        "USER", "ASSISTANT", "ASSISTANT", "TOOL", "ASSISTANT"
    ]  # fmt: skip

    # CrewAI: tool_calls in metadata, the result in a tool message; metadata and summary.
    page.evaluate(f"location.hash = {link(crew_id)!r}")
    call = page.locator('details.tool-call[data-call-id="call_search_1"]')
    call.wait_for()
    call.locator("summary").click()
    text = call.inner_text()
    assert "search" in text and '"query": "capital of France"' in text
    assert "Paris is the capital of France." in text
    assert page.locator(".conv-heading").inner_text() == "Capitals"
    assert "The crew looked up the capital of France." in page.locator(".summary").inner_text()
    page.locator("details.meta summary").first.click()
    assert '"status": "completed"' in page.locator(".conv-header").inner_text()
    message_meta = page.locator(".msg details.meta").first
    message_meta.locator("summary").click()
    assert '"crewai": "user_input"' in message_meta.inner_text()
    screenshot(page, server, "conversation-crewai")


def test_a_message_from_another_process_appears_live(server: Server, open_page: OpenPage) -> None:
    user = "erin"
    cid, other = new_id("live"), new_id("other")
    with ConversationStore(server.store_url) as store:
        core_chat(store, cid, user, "first")
        core_chat(store, other, user, "elsewhere")
        opened = open_page(user, link(cid))
        page = opened.page
        page.wait_for_selector(".live.live")
        page.evaluate("window.notReloaded = true")
        # The view's calls and its event stream are the TypeScript client's (web/client/, the
        # build of packages/client-ts), loaded under the view's policy: it has no other.
        modules = {u.split("/ui/", 1)[1] for u in opened.requests if u.endswith(".js")}
        assert {"store.js", "client/index.js", "client/events.js"} <= modules, modules
        assert not modules & {"api.js", "sse.js"}
        # This process is not the server: the server learns of it from the database.
        mid = store.append_message(
            conversation_id=cid, user_id=user, role="assistant", content="a live reply"
        )
        store.append_message(conversation_id=other, user_id=user, role="user", content="not here")
        msg = page.locator(f'.msg[data-message-id="{mid}"]')
        msg.wait_for()
        assert "a live reply" in msg.inner_text()
        page.wait_for_function(
            "() => document.querySelector('.conv-header .count').textContent === '3 messages'"
        )
        store.update_message(
            conversation_id=cid, message_id=mid, user_id=user, content="an edited reply"
        )
        page.wait_for_function(
            f"() => document.querySelector('.msg[data-message-id=\"{mid}\"]')?.textContent"
            ".includes('an edited reply')"
        )
        store.delete_message(conversation_id=cid, message_id=mid, user_id=user)
        msg.wait_for(state="detached")
        store.append_message(conversation_id=cid, user_id=user, role="user", content="last one")
        page.locator(".msg", has_text="last one").wait_for()
    assert page.evaluate("window.notReloaded") is True
    assert "not here" not in page.locator(".messages-list").inner_text()
    texts = page.locator(".msg .parts").all_inner_texts()
    assert texts == ["first", "You said: first", "last one"]
    screenshot(page, server, "conversation-live")


def test_data_is_shown_as_text_never_run(server: Server, open_page: OpenPage) -> None:
    user = "frank"
    cid = new_id("xss")
    hostile = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
    with ConversationStore(server.store_url) as store:
        store.append_messages(
            conversation_id=cid,
            user_id=user,
            messages=[
                {"role": "user", "content": hostile, "metadata": {"note": hostile}},
                {"role": "assistant", "content": [{"type": "text", "text": hostile}],
                 "metadata": {"tool_calls": [{"id": "x1", "type": "function", "function": {
                     "name": hostile, "arguments": hostile}}]}},
                {"role": "tool", "content": hostile, "metadata": {"tool_call_id": "x1"}},
                {"role": "user", "content": [{"type": "image_url", "image_url": {
                    "url": "javascript:window.pwned = 3"}}]},
            ],
        )  # fmt: skip
        store.update_conversation(
            conversation_id=cid, user_id=user, metadata={"title": hostile, "summary": hostile}
        )
    page = open_page(user).page
    row = page.locator(f'.conv-list li[data-conversation-id="{cid}"]')
    assert row.locator(".conv-title").inner_text() == hostile
    row.locator("a").click()
    page.wait_for_selector(".msg")
    assert page.locator(".conv-heading").inner_text() == hostile
    assert page.locator(".msg .text").first.inner_text() == hostile
    call = page.locator('details.tool-call[data-call-id="x1"]')
    call.locator("summary").click()
    assert hostile in call.inner_text()
    assert page.evaluate("window.pwned") is None
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("script").count() == 1  # the page's own module
    assert page.locator("img.image").count() == 0  # a javascript: URL is shown as text
    assert "[image: javascript:window.pwned = 3]" in page.locator(".messages-list").inner_text()
    screenshot(page, server, "conversation-hostile")


def test_a_user_never_sees_another_users_conversation(server: Server, open_page: OpenPage) -> None:
    gina, hal = new_id("gina-secret"), new_id("hal-own")
    with ConversationStore(server.store_url) as store:
        core_chat(store, gina, "gina", "gina's secret")
        store.update_conversation(conversation_id=gina, user_id="gina", metadata={"title": "G"})
        core_chat(store, hal, "hal", "hal's words")
        nobody = new_id("agent")
        core_chat(store, nobody, None, "an agent's own")  # type: ignore[arg-type]

    opened = open_page("hal")
    page = opened.page
    page.wait_for_selector(".conv-list li")
    listed = page.locator(".conv-list li").evaluate_all(
        "els => els.map(e => e.dataset.conversationId)"
    )
    assert listed == [hal]
    assert page.locator("#filter-user").count() == 0  # only admins filter by user
    # By its address: answered as missing, and nothing of it shows.
    opened.console.expected.append("404")
    page.evaluate(f"location.hash = {link(gina)!r}")
    page.wait_for_selector("#alert:not([hidden])")
    assert "not found" in page.locator("#alert").inner_text()
    body = page.locator("body").inner_text()
    assert "gina's secret" not in body and gina not in page.locator("#detail").inner_text()
    assert page.locator(".msg").count() == 0

    # An admin sees everyone's, and filters by user.
    admin = open_page("admin").page
    admin.wait_for_selector(f'.conv-list li[data-conversation-id="{gina}"]')
    admin.wait_for_selector(f'.conv-list li[data-conversation-id="{nobody}"]')
    admin.fill("#filter-user", "gina")
    admin.press("#filter-user", "Enter")
    expect(admin.locator(".conv-list li")).to_have_count(1)
    expect(admin.locator(".conv-list li")).to_have_attribute("data-conversation-id", gina)
    expect(admin.locator(".conv-list li .user")).to_have_text("gina")
    screenshot(admin, server, "conversation-list-admin")


def test_the_live_view_resumes_after_the_server_restarts(
    server: Server, open_page: OpenPage
) -> None:
    """The event stream drops when the server stops; the page reconnects with the last event
    id it got and receives what was written while it was away, without a reload."""
    user = "bob"
    cid = new_id("resume")
    with ConversationStore(server.store_url) as store:
        core_chat(store, cid, user, "before")
        opened = open_page(user, link(cid))
        page = opened.page
        expect(page.locator(".live")).to_have_text("● live")
        page.evaluate("window.notReloaded = true")
        # Chromium logs the cut stream and the fetches made while the server is down.
        opened.console.expected += ["ERR_INCOMPLETE_CHUNKED_ENCODING", "ERR_CONNECTION_REFUSED"]
        port = int(server.base.rsplit(":", 1)[1])
        stop(server.process)
        expect(page.locator(".live")).to_have_text("reconnecting…")
        store.append_message(conversation_id=cid, user_id=user, role="user", content="while away")
        args = [str(BIN / "convostore-server"), "--url", server.store_url, "--port", str(port)]
        server.process, server.log = spawn(
            [*args, "--tokens", str(server.tokens_file)], server.log.parent, port
        )
        page.locator(".msg", has_text="while away").wait_for()
        expect(page.locator(".live")).to_have_text("● live")
    assert page.evaluate("window.notReloaded") is True
    assert page.locator(".msg .parts").all_inner_texts() == [
        "before", "You said: before", "while away"
    ]  # fmt: skip


def test_conversations_whose_id_a_path_cannot_carry_open_like_any_other(
    server: Server, open_page: OpenPage
) -> None:
    """``.`` and ``..`` (URLs resolve them away, even as %2E): the page asks for them with the
    id in the query, from the list and by address, and follows them live."""
    user = "ivy"
    with ConversationStore(server.store_url) as store:
        for cid in (".", "..", "-"):
            core_chat(store, cid, user, f"in {cid}")
        page = open_page(user).page
        for cid in (".", "..", "-"):
            page.locator(f'.conv-list li[data-conversation-id="{cid}"] a').click()
            expect(page.locator(".conv-heading")).to_have_text(cid)
            expect(page.locator(".msg .parts").first).to_have_text(f"in {cid}")
            expect(page.locator(".live")).to_have_text("● live")
            store.append_message(conversation_id=cid, user_id=user, role="user", content="more")
            page.locator(".msg", has_text="more").wait_for()
            assert page.evaluate("location.hash") == link(cid)
        page.evaluate(f"location.hash = {link('..')!r}")
        expect(page.locator(".conv-heading")).to_have_text("..")
        expect(page.locator(".msg .parts")).to_have_text(["in ..", "You said: in ..", "more"])


def test_langgraph_threads_are_labelled_and_times_carry_their_date(
    server: Server, open_page: OpenPage
) -> None:
    user = "jo"
    thread, chat, paused = new_id("thread"), new_id("chat"), new_id("paused")
    with ConversationStore(server.store_url) as store:
        langgraph_thread(store, thread, user)
        core_chat(store, chat, user)
        langgraph_thread(store, paused, user, waiting_at="approve")
    page = open_page(user).page
    rows = ".conv-list li"
    expect(page.locator(f'{rows}[data-conversation-id="{thread}"] .badge')).to_have_text(
        "LangGraph"
    )
    expect(page.locator(f'{rows}[data-conversation-id="{chat}"] .badge')).to_have_text("core")
    # a thread paused at an interrupt says so, and at which node, in the list and the header
    expect(page.locator(f'{rows}[data-conversation-id="{paused}"] .badge')).to_have_text(
        ["LangGraph", "waiting at approve"]
    )
    page.locator(f'{rows}[data-conversation-id="{paused}"] a').click()
    waiting = page.locator("#detail .conv-facts .badge.waiting")
    expect(waiting).to_have_text("waiting at approve")
    expect(waiting).to_have_attribute("title", '{"approve": ["refund"]}')
    page.locator(f'{rows}[data-conversation-id="{thread}"] a').click()
    # a list of texts: retried until the paused thread's header has given way to this one's
    expect(page.locator("#detail .conv-facts .badge")).to_have_text(["LangGraph"])
    page.locator('details.tool-call[data-call-id="call_refund"]').wait_for()
    # Every time shown says its day too: today's as much as another day's.
    shown = page.locator("time").evaluate_all(
        "els => els.map(e => [e.textContent, new Date(e.dateTime).getFullYear()])"
    )
    assert len(shown) >= 6
    for text, year in shown:
        assert str(year) in text, text
