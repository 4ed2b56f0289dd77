"""Screenshot of a report with one object clicked (for the README), in headless Chromium.

    python docs/figures/report_screenshot.py music-out/report.html rolling_stones docs/figures/music_report.png

Selects the object as a click on it (or on its row of the object table) does -- by its
name, since on a crowded map a click may hit a neighbour -- and saves the top of the page:
the map with the object's comparisons drawn, and its table.
"""
from __future__ import annotations

import io
import sys
import time
from pathlib import Path

from roembed.report.browser import open_report, start_chrome


def main(report: str, name: str, target: str, width: int = 1400, height: int = 740) -> None:
    from PIL import Image

    chrome = start_chrome(width, height + 300, network_log=False)
    try:
        open_report(chrome, Path(report))
        chrome.execute_script("const s = Bokeh.documents[0].get_model_by_name('objects');"
                              "s.selected.indices = [s.data.name.indexOf(arguments[0])];", name)
        time.sleep(1.0)
        image = Image.open(io.BytesIO(chrome.get_screenshot_as_png())).convert("RGB")
        image.crop((0, 0, width, height)).save(target, optimize=True)
    finally:
        chrome.quit()
    print(f"wrote {target}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
