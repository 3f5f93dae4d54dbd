"""Search in the browser: the box in the bar, the hits newest first with the matched text
marked (a snippet holding markup is shown as text, never run), the next page, a hit opening
its conversation scrolled to the message (loading older pages until it is there), another
user's messages never shown, and a refused query named."""

from __future__ import annotations

from conftest import OpenPage, screenshot
from convostore import ConversationStore
from playwright.sync_api import expect
from served import Server, new_id

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def expected_hits(server: Server, user: str, query: str) -> list[str]:
    """The message ids the API answers, in its order (newest first), every page."""
    ids: list[str] = []
    with ConversationStore(server.store_url) as store:
        after = None
        while True:
            page = store.search_messages(query=query, user_id=user, limit=100, after=after)
            ids += [hit.message.message_id for hit in page.items]
            if not (after := page.next_cursor):
                return ids


def hits(page: object) -> list[str]:
    return page.locator(".hit").evaluate_all("els => els.map(e => e.dataset.messageId)")  # type: ignore[attr-defined, no-any-return]


def test_search_marks_the_hits_pages_and_opens_the_message(
    server: Server, open_page: OpenPage
) -> None:
    # Hits come by (time, conversation id, position), newest first: the ids make the order
    # the same when the writes below share a millisecond (z-late first, a-old's first last).
    old, late, many = new_id("a-old"), new_id("z-late"), new_id("many")
    with ConversationStore(server.store_url) as store:
        first = [{"role": "user", "content": f"My ORDER number is A-7731 {HOSTILE}"}]
        chatter = [{"role": "assistant", "content": f"filler {n}"} for n in range(120)]
        written = store.append_messages(
            conversation_id=old, user_id="kim", messages=first + chatter
        )
        target = written[0]
        store.append_messages(
            conversation_id=many,
            user_id="kim",
            messages=[{"role": "user", "content": f"order number {n}"} for n in range(24)],
        )
        store.append_message(
            conversation_id=late, user_id="kim", role="assistant", content="Your order number?"
        )
        store.append_message(
            conversation_id=new_id("lee"), user_id="lee", role="user", content="order number L-9"
        )
    expected = expected_hits(server, "kim", "order number")
    assert len(expected) == 26 and expected[-1] == target

    opened = open_page("kim")
    page = opened.page
    page.fill("#search", "order number")
    page.press("#search", "Enter")
    expect(page.locator(".hit")).to_have_count(20)
    assert hits(page) == expected[:20]  # newest first, one page
    assert page.locator(".hit").first.get_attribute("data-conversation-id") == late
    marks = page.locator(".hit mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} == {"order", "number"}
    first_hit = page.locator(".hit").first
    assert first_hit.locator(".snippet").inner_text() == "Your order number?"
    assert first_hit.locator("mark").all_inner_texts() == ["order", "number"]

    page.click(".hits-scroll button.more")
    expect(page.locator(".hit")).to_have_count(26)
    assert hits(page) == expected
    expect(page.locator(".hits-scroll button.more")).to_be_hidden()
    assert "all of them" in page.locator(".hits-scroll .status").inner_text()
    # The old message's snippet holds markup: shown as text, marked, never run.
    hostile_hit = page.locator(f'.hit[data-message-id="{target}"]')
    assert HOSTILE in hostile_hit.locator(".snippet").inner_text()
    assert hostile_hit.locator("mark").all_inner_texts() == ["ORDER", "number"]
    assert page.evaluate("window.pwned") is None
    assert page.locator("script").count() == 1 and page.locator("img[src=x]").count() == 0
    assert "L-9" not in page.locator("body").inner_text()  # another user's message
    screenshot(page, server, "search-hits")

    # The hit opens its conversation at the message, 120 messages back: older pages load.
    hostile_hit.locator("a").click()
    expect(page.locator(".msg.hit-target")).to_have_count(1)
    highlighted = page.locator(".msg.hit-target")
    assert highlighted.get_attribute("data-message-id") == target
    expect(highlighted).to_be_in_viewport()
    assert HOSTILE in highlighted.inner_text()
    assert page.evaluate("window.pwned") is None
    screenshot(page, server, "search-opened")

    # Back: the hits again, the box holding the query.
    page.go_back()
    expect(page.locator(".hit")).to_have_count(20)
    assert page.locator("#search").input_value() == "order number"


def test_another_users_messages_and_a_refused_query(server: Server, open_page: OpenPage) -> None:
    with ConversationStore(server.store_url) as store:
        store.append_message(
            conversation_id=new_id("lee-only"), user_id="lee", role="user", content="zebra 42"
        )
    opened = open_page("kim", "#/search/zebra")
    page = opened.page
    expect(page.locator(".hits-scroll .status")).to_have_text("No message matches.")
    assert page.locator(".hit").count() == 0
    opened.console.expected.append("400")
    page.fill("#search", "x" * 1001)
    page.press("#search", "Enter")
    page.wait_for_selector("#alert:not([hidden])")
    assert "q: has 1001 characters, over the limit of 1000" in page.locator("#alert").inner_text()
    assert page.locator(".hit").count() == 0
    lee = open_page("lee", "#/search/ZEBRA").page
    expect(lee.locator(".hit")).to_have_count(1)
    assert lee.locator(".hit mark").all_inner_texts() == ["zebra"]
