"""Headless Chromium for the report's browser tests (Selenium with the Debian chromium-driver).

Skipped when Chromium, its driver or Selenium is missing, unless ROEMBED_BROWSER_TESTS=require
(set by .ci/run), which turns the skip into a failure so CI cannot pass without running them.
"""
import json
import os
import shutil
import time

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def _missing(reason: str):
    if os.environ.get("ROEMBED_BROWSER_TESTS") == "require":
        pytest.fail(f"browser tests required (ROEMBED_BROWSER_TESTS=require) but {reason}")
    pytest.skip(reason)


def start_chrome(width: int = 1400, height: int = 1300):
    """A headless Chromium session with console and network logs, or skip."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed")
    binary = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    driver = shutil.which("chromedriver") or next(
        (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if os.path.exists(p)), None)
    if binary is None or driver is None:
        _missing("Chromium or chromedriver not found (apt-get install chromium chromium-driver)")
    options = Options()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    # an explicit driver path: Selenium Manager never downloads anything
    return webdriver.Chrome(service=Service(driver), options=options)


def open_report(chrome, path, timeout: float = 60.0) -> float:
    """Loads ``path`` and waits until Bokeh has rendered every view; returns the seconds it took."""
    started = time.perf_counter()
    chrome.get(path.resolve().as_uri())
    while time.perf_counter() - started < timeout:
        if chrome.execute_script("return !!(window.Bokeh && Bokeh.documents.length && Bokeh.index.roots.length"
                                 " && Bokeh.documents[0].is_idle)"):
            return time.perf_counter() - started
        time.sleep(0.02)
    raise TimeoutError(f"{path} did not render within {timeout} s")


def requests_made(chrome) -> list[str]:
    """URLs the page requested since the last call (from Chromium's performance log)."""
    urls = []
    for entry in chrome.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def click_at(chrome, x: float, y: float) -> None:
    """A real mouse click at viewport coordinates."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    actions = ActionBuilder(chrome)
    actions.pointer_action.move_to_location(int(round(x)), int(round(y))).click()
    actions.perform()


def model_data(chrome, name: str, column: str):
    return chrome.execute_script(
        "return Array.from(Bokeh.documents[0].get_model_by_name(arguments[0]).data[arguments[1]])", name, column)


# text of the page including Bokeh's shadow roots (where its widgets and tables render)
DEEP_TEXT = """
const parts = [];
const walk = (node) => {
  if (node.shadowRoot) walk(node.shadowRoot);
  for (const child of node.childNodes) child.nodeType === 3 ? parts.push(child.textContent) : walk(child);
};
walk(arguments[0] || document.body);
return parts.join(" ");
"""

# viewport position of object ``o`` on the map
OBJECT_POSITION = """
const doc = Bokeh.documents[0], view = Bokeh.index.get_one(doc.get_model_by_name("map"));
const source = doc.get_model_by_name("objects"), o = arguments[0];
const box = view.canvas_view.el.getBoundingClientRect();
return [box.left + view.frame.x_scale.compute(source.data.x[o]),
        box.top + view.frame.y_scale.compute(source.data.y[o])];
"""

# viewport centre of the first cell of table arguments[0] (a model name) whose text is arguments[1]
CELL_POSITION = """
const table = Bokeh.index.get_one(Bokeh.documents[0].get_model_by_name(arguments[0])), wanted = arguments[1];
let found = null;
const walk = (node) => {
  if (found) return;
  if (node.shadowRoot) walk(node.shadowRoot);
  for (const child of node.children || []) {
    if (child.classList && child.classList.contains("slick-cell") && child.textContent.trim() === wanted) {
      found = child; return;
    }
    walk(child);
  }
};
walk(table.el);
if (!found) return null;
const box = found.getBoundingClientRect();
return [box.left + box.width / 2, box.top + box.height / 2];
"""
