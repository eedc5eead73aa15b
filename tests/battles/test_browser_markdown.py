"""Answers rendered in a real browser by the one renderer (markdown-it, highlight.js, KaTeX,
DOMPurify from static/vendor/): tables, links, code and math come out the same in both panes,
and hostile markup, links and images stay inert."""

from __future__ import annotations

import pytest

from tests.helpers import make_model, make_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]

MARKER = "END-OF-SAMPLE"
SAMPLE = f"""| Planet | Moons |
|---|---|
| Mars | 2 |
| Earth | 1 |

See [the docs](https://example.org/guide) or [this](javascript:window.__pwned=1) and
![pixel](data:image/png;base64,iVBORw0KGgo=) ![tracker](https://example.org/t.gif)
![local](/api/prompts/random/) then <a href="javascript:window.__pwned=2">raw</a>, &#67;laude.

> A quoted line, with a nested list:
> - one
>   - two

```python
def area(r):
    return 3.14 * r ** 2
```

Energy is $E = mc^2$ and

$$\\int_0^1 x\\,dx = \\frac{{1}}{{2}}$$

<iframe src="https://example.org"></iframe><svg onload="window.__pwned=3"></svg>
<img src=x onerror="window.__pwned=4"><style>body{{display:none}}</style>

{MARKER}

"""

# The rendered sample in one pane: every element before the marker's paragraph, as HTML.
SAMPLE_HTML = """(s, marker) => {
  const out = [];
  for (const el of document.querySelectorAll('#pane-' + s + ' .bot-msg > *')) {
    if (el.textContent.trim() === marker) break;
    out.push(el.outerHTML);
  }
  return out.join('\\n');
}"""


@pytest.fixture
def markdown_models(transactional_db):
    for name in ("Ink Heron", "Ink Crane"):
        make_model(name, name.lower().replace(" ", "-"), prefix=SAMPLE, answer_tokens=20)


def test_tables_links_code_and_math_render_alike_in_both_panes_and_hostile_parts_stay_inert(
    asgi_server, browser_page, markdown_models
):
    make_user("uma@example.com")
    page = browser_page
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    sign_in(page, asgi_server, "uma@example.com")
    page.fill("#prompt", "Show me some formatting.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")

    a, b = (page.evaluate(f"s => ({SAMPLE_HTML})(s, '{MARKER}')", s) for s in "ab")
    assert a and a == b  # one renderer, the same output on both sides
    for side in "ab":
        pane = page.locator(f"#pane-{side} .bot-msg")
        assert pane.locator("table th").all_inner_texts() == ["Planet", "Moons"]
        assert pane.locator("table tbody tr").count() == 2
        link = pane.locator("a[href='https://example.org/guide']")
        assert link.get_attribute("rel") == "noopener nofollow ugc"
        assert link.get_attribute("target") == "_blank"
        assert pane.locator("blockquote ul ul li").inner_text() == "two"
        assert pane.locator("pre code .hljs-keyword").first.inner_text() == "def"
        assert pane.locator(".katex").count() >= 2 and pane.locator(".katex-display").count() == 1
        # Refused: script URLs, data: images, frames, raw HTML of any kind.
        assert pane.locator("a[href^='javascript'], img, iframe, svg[onload], style").count() == 0
        shown = pane.inner_text()  # what was refused as markup shows as text
        assert "[this](javascript:window.__pwned=1)" in shown and "<iframe" in shown
        # No image is ever fetched, from anywhere: each shows as its description.
        assert pane.locator(".image-alt").all_inner_texts() == ["[tracker]", "[local]"]
        assert "&#67;laude" in shown  # an entity stays as typed, never a name in disguise
    assert page.evaluate("() => window.__pwned") is None
    assert not [u for u in requested if "t.gif" in u or "/api/prompts/random" in u]
    assert not [line for line in page.console_log if "pageerror" in line]
