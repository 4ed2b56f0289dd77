"""The report in a real browser (headless Chromium): it loads without errors or network
requests, lists every object, answers clicks on objects and annotators, and is not blank."""
import io
import os
from pathlib import Path
import time

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from roembed.cli import main
from roembed.experiments import make_synthetic

from browser_kit import CELL_POSITION, DEEP_TEXT, OBJECT_POSITION, click_at, model_data, open_report, requests_made, \
    start_chrome

pytestmark = pytest.mark.browser
N = 24


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One small fit with annotators and labels, written by ``roembed fit --report``."""
    data = make_synthetic(n_objects=N, dim=2, n_train=700, n_validation=10, n_test=10, votes=(2, 4), rate=0.25,
                          model="spammers", n_annotators=10, random_state=7)
    folder = tmp_path_factory.mktemp("browser")
    t = data.train.triplets
    pd.DataFrame({"anchor": t[:, 0], "closer": t[:, 1], "farther": t[:, 2],
                  "worker": [f"w{a}" for a in data.train.annotator]}).to_csv(folder / "votes.csv", index=False)
    (folder / "labels.csv").write_text("index0,name,kind\n" +
                                       "".join(f"{o},object-{o:02d},kind{o % 4}\n" for o in range(N)))
    out = folder / "out"
    result = CliRunner().invoke(main, ["fit", str(folder / "votes.csv"), "--out", str(out), "--names",
                                       str(folder / "labels.csv"), "--labels", str(folder / "labels.csv"),
                                       "--label-column", "kind", "--max-iter", "200", "--quiet", "--report"])
    assert result.exit_code == 0, result.output + result.stderr
    return out


@pytest.fixture(scope="module")
def page(run):
    chrome = start_chrome()
    try:
        open_report(chrome, run / "report.html")
        yield chrome
    finally:
        chrome.quit()


def wait_for(read, length=None, timeout=10.0):
    """``read()`` once it returns something truthy (of ``length`` items, if given), or its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if (value and (length is None or len(value) == length)) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def comparisons_of(run, o):
    table = pd.read_csv(run / "comparisons.csv")
    return table[(table[list("ijlk")] == o).any(axis=1)]


def test_loads_without_errors_or_network_requests(page, run):
    errors = [e for e in page.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    urls = requests_made(page)
    assert urls and all(u.startswith(("file:", "data:", "blob:")) for u in urls), urls


def test_every_object_name_is_in_the_dom(page):
    index = page.execute_script("return document.getElementById('object-index').textContent")
    for o in range(N):
        assert f"object-{o:02d}" in index
    rendered = page.execute_script(DEEP_TEXT)  # the object table renders names too (first rows)
    assert "object-00" in rendered and "kind0" in rendered


def test_clicking_an_object_lists_and_draws_its_comparisons(page, run):
    counts = pd.read_csv(run / "embedding.csv")["n_responses"].to_numpy()
    o = int(np.argsort(counts)[len(counts) // 2])  # a typical object
    x, y = page.execute_script(OBJECT_POSITION, o)
    click_at(page, x, y)
    expected = comparisons_of(run, o)
    shown = wait_for(lambda: model_data(page, "shown", "edge"), len(expected))
    assert sorted(shown) == sorted(expected["edge"].tolist())  # run.edge == position in comparisons.csv
    texts = model_data(page, "shown", "text")
    assert all(f"object-{o:02d}" in t for t in texts)
    flagged = model_data(page, "shown", "flagged")
    assert flagged.count("yes") == int(expected["flagged"].sum())
    assert flagged == sorted(flagged, reverse=True)  # flagged ones first
    assert len(model_data(page, "near_segments", "x0")) == min(len(expected), 50)
    rendered = " ".join(page.execute_script(DEEP_TEXT).split())
    assert f"{len(expected)} comparisons" in rendered and f"object-{o:02d}" in rendered
    # annotators listed per comparison are the ones in comparisons.csv
    annotators = dict(zip(expected["edge"], expected["annotators"]))
    assert all(a == annotators[e] for e, a in zip(shown, model_data(page, "shown", "annotators")))


def test_clicking_an_annotator_lists_their_comparisons(page, run):
    table = pd.read_csv(run / "annotators.csv")
    worker = str(table["annotator"].iloc[0])  # the least reliable comes first
    page.execute_script("const tabs = Bokeh.documents[0].get_model_by_name('tabs');"
                        "tabs.active = tabs.tabs.findIndex((t) => t.title.startsWith('Annotators'))")
    position = wait_for(lambda: page.execute_script(CELL_POSITION, "annotator_table", worker))
    assert position, f"no table cell shows {worker}"
    click_at(page, *position)
    comparisons = pd.read_csv(run / "comparisons.csv")
    voted = comparisons[comparisons["annotators"].str.split(";").apply(lambda a: worker in a)]
    shown = wait_for(lambda: model_data(page, "shown", "edge"), len(voted))
    assert sorted(shown) == sorted(voted["edge"].tolist())
    rendered = " ".join(page.execute_script(DEEP_TEXT).split())
    assert f"annotator {worker} : {len(voted)} comparisons" in rendered


def test_screenshot_shows_the_map(page, run, tmp_path):
    from PIL import Image

    page.execute_script("Bokeh.documents[0].get_model_by_name('objects').selected.indices = []; window.scrollTo(0, 0)")
    time.sleep(0.3)
    image = Image.open(io.BytesIO(page.get_screenshot_as_png())).convert("RGB")
    image.save(Path(os.environ.get("ROEMBED_SCREENSHOTS", tmp_path)) / "report-test.png")  # to look at
    pixels = np.asarray(image).reshape(-1, 3)
    assert pixels.std() > 20  # not blank
    # the four label colours of the scatter are on screen (drawn with alpha 0.85 on white)
    for colour in ((31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)):
        blended = 0.85 * np.array(colour) + 0.15 * 255
        assert (np.abs(pixels - blended).sum(axis=1) < 30).sum() > 100, colour

