"""Headless Chromium on a report, for the browser tests and the report benchmark.

Selenium with an explicit ``chromedriver`` path (Debian's ``chromium-driver``), so Selenium
Manager never downloads a driver.  Bokeh renders its widgets inside shadow roots;
``DEEP_TEXT`` and ``CELL_POSITION`` look inside them.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


class NoBrowser(RuntimeError):
    """Selenium, Chromium or chromedriver is missing."""


def start_chrome(width: int = 1400, height: int = 1300, network_log: bool = True):
    """A headless Chromium session with console (and network) logs; raises :class:`NoBrowser`."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise NoBrowser("selenium is not installed (pip install selenium)") from None
    binary = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    driver = shutil.which("chromedriver") or next(
        (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if os.path.exists(p)), None)
    if binary is None or driver is None:
        raise NoBrowser("Chromium or chromedriver not found (apt-get install chromium chromium-driver)")
    options = Options()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", **({"performance": "ALL"} if network_log else {})})
    # an explicit driver path: Selenium Manager never downloads anything
    chrome = webdriver.Chrome(service=Service(driver), options=options)
    chrome.set_page_load_timeout(300)
    return chrome


def open_report(chrome, path, timeout: float = 120.0) -> float:
    """Loads ``path`` and waits until Bokeh has rendered every view (the page answers clicks);
    returns the seconds from the start of navigation, by the page's own clock."""
    started = time.perf_counter()
    chrome.get(Path(path).resolve().as_uri())
    while time.perf_counter() - started < timeout:
        ready = chrome.execute_script("return (window.Bokeh && Bokeh.documents.length && Bokeh.index.roots.length"
                                      " && Bokeh.documents[0].is_idle) ? performance.now() : null")
        if ready is not None:
            return ready / 1000.0
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
