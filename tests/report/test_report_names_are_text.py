"""Object names and annotator ids come from crowd files (salmon's text targets are HTML); the report shows them
as text and never runs or renders markup inside them: in the object index, the tables, a clicked object's or
annotator's heading, the labels on the map and the hover tooltip."""
import pandas as pd
import pytest
from click.testing import CliRunner

from roembed.cli import main
from roembed.experiments import make_synthetic

from browser_kit import CELL_POSITION, DEEP_TEXT, OBJECT_POSITION, click_at, model_data, open_report, start_chrome

pytestmark = pytest.mark.browser
N = 12
PAYLOAD = '<img src=x onerror="window.pwned=1">'
NAMES = [f"{PAYLOAD}obj{o}" if o % 3 == 0 else f"<b>bold{o}</b>" if o % 3 == 1 else f"plain & {o}"
         for o in range(N)]
WORKERS = [f'<script>window.pwned=2</script>w{a}' for a in range(4)]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    data = make_synthetic(n_objects=N, dim=2, n_train=300, n_validation=10, n_test=10, votes=(2, 3), rate=0.2,
                          model="spammers", n_annotators=4, random_state=3)
    folder = tmp_path_factory.mktemp("names")
    t = data.train.triplets
    pd.DataFrame({"anchor": [NAMES[o] for o in t[:, 0]], "closer": [NAMES[o] for o in t[:, 1]],
                  "farther": [NAMES[o] for o in t[:, 2]],
                  "worker": [WORKERS[a % 4] for a in data.train.annotator]}).to_csv(folder / "votes.csv", index=False)
    out = folder / "out"
    result = CliRunner().invoke(main, ["fit", str(folder / "votes.csv"), "--out", str(out), "--max-iter", "200",
                                       "--quiet", "--report"])
    assert result.exit_code == 0, result.output + result.stderr
    chrome = start_chrome()
    try:
        open_report(chrome, out / "report.html")
        yield chrome, out
    finally:
        chrome.quit()


def pwned(chrome):
    return chrome.execute_script("return window.pwned === undefined ? null : window.pwned")


# the text of every element matching a selector, in the page and inside every shadow root (Bokeh draws there)
DEEP_ELEMENTS = """
const found = [];
const text = (node) => (node.shadowRoot ? text(node.shadowRoot) : "")
  + Array.from(node.childNodes, (c) => (c.nodeType === 3 ? c.textContent : text(c))).join("");
const walk = (root) => {
  for (const el of root.querySelectorAll(arguments[0])) found.push(el.getAttribute("src") ?? text(el));
  for (const el of root.querySelectorAll("*")) if (el.shadowRoot) walk(el.shadowRoot);
};
walk(document);
return found;
"""


def markup_from_names(chrome):
    """Elements that a name's or an id's markup would have made: the payload's image, bold names, scripts."""
    return ([src for src in chrome.execute_script(DEEP_ELEMENTS, "img") if src == "x"]
            + [t for t in chrome.execute_script(DEEP_ELEMENTS, "b") if t.startswith("bold")]
            + [t for t in chrome.execute_script(DEEP_ELEMENTS, 'script:not([type="application/json"])')
               if "pwned" in t])


def test_names_and_annotator_ids_are_shown_as_text_and_never_run(page):
    chrome, out = page
    assert markup_from_names(chrome) == []
    index = chrome.execute_script("return document.getElementById('object-index').textContent")
    assert all(name in index for name in NAMES)
    names = pd.read_csv(out / "embedding.csv")["name"].tolist()
    o = names.index(NAMES[0])
    x, y = chrome.execute_script(OBJECT_POSITION, o)
    chrome.execute_script("window.scrollTo(0, 0)")
    click_at(chrome, x, y)  # a click lists its comparisons under a heading with its name, and names objects
    shown = model_data(chrome, "shown", "text")
    assert shown and any(NAMES[0] in text for text in shown)
    rendered = chrome.execute_script(DEEP_TEXT)
    assert PAYLOAD in rendered and "<b>bold1</b>" in rendered  # the markup as characters, not elements
    chrome.execute_script("const tabs = Bokeh.documents[0].get_model_by_name('tabs');"
                          "tabs.active = tabs.tabs.findIndex((t) => t.title.startsWith('Annotators'))")
    position = None
    for _ in range(100):
        position = chrome.execute_script(CELL_POSITION, "annotator_table", WORKERS[0])
        if position:
            break
    assert position, "no annotator cell shows the worker id as text"
    click_at(chrome, *position)
    assert WORKERS[0] in chrome.execute_script(DEEP_TEXT)
    # hover over the object: the tooltip names it, as text
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    chrome.execute_script("const tabs = Bokeh.documents[0].get_model_by_name('tabs'); tabs.active = 0;"
                          "window.scrollTo(0, 0)")
    x, y = chrome.execute_script(OBJECT_POSITION, o)
    hover = ActionBuilder(chrome)
    hover.pointer_action.move_to_location(int(round(x)) + 1, int(round(y)))
    hover.perform()
    tooltip = ""
    for _ in range(100):
        tooltip = " ".join(chrome.execute_script(DEEP_ELEMENTS, ".bk-Tooltip"))
        if "obj0" in tooltip:
            break
    assert PAYLOAD + "obj0" in tooltip
    # no markup from a name or id became an element anywhere, and none ran
    assert markup_from_names(chrome) == []
    assert pwned(chrome) is None
