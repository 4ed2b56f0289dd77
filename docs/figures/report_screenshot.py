"""Screenshot of a report with one object clicked (for the README), in headless Chromium.

    python docs/figures/report_screenshot.py music-out/report.html rolling_stones docs/figures/music_report.png

Clicks the object with the mouse (at its position on the map), as a person would, and
saves the top of the page: the map with the object's comparisons drawn, and its table.
"""
from __future__ import annotations

import io
import sys
import time
from pathlib import Path

from roembed.report.browser import OBJECT_POSITION, click_at, open_report, start_chrome


def main(report: str, name: str, target: str, width: int = 1400, height: int = 700) -> None:
    from PIL import Image

    chrome = start_chrome(width, height + 100, network_log=False)
    try:
        open_report(chrome, Path(report))
        names = chrome.execute_script("return Bokeh.documents[0].get_model_by_name('objects').data.name")
        x, y = chrome.execute_script(OBJECT_POSITION, names.index(name))
        click_at(chrome, x, y)
        time.sleep(1.0)
        image = Image.open(io.BytesIO(chrome.get_screenshot_as_png())).convert("RGB")
        image.crop((0, 0, width, height)).save(target, optimize=True)
    finally:
        chrome.quit()
    print(f"wrote {target}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
