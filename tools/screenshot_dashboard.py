"""Screenshot a running dashboard with Debian's headless Chromium (docs/dashboard.png, in the README and the docs).

holistic up --demo --keep-running --dashboard-address 127.0.0.1:8765 &
.venv/bin/python tools/screenshot_dashboard.py "http://127.0.0.1:8765/?window=all&detail=swift-8b" docs/dashboard.png

It waits until every listed model's profile is on the page (and, for a window other than all time,
the comparison), then captures the whole page, below the fold too (`--viewport` for the window only).
"""

from __future__ import annotations

import argparse
import base64
import shutil
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

READY = """
const s = window.holistic && window.holistic.state;
if (!s || s.models.size === 0 || s.profiles.size < s.models.size) return false;
return s.window === "all" || Boolean(document.body.dataset.compared);
"""


def main(url: str, out: str, width: int = 1700, height: int = 1900, full_page: bool = True) -> None:
    profile = tempfile.mkdtemp(prefix="holistic-shot-")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", f"--window-size={width},{height}", f"--user-data-dir={profile}"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)
        deadline = time.monotonic() + 30
        while not driver.execute_script(READY) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        if not full_page:
            driver.save_screenshot(out)
            return
        page_height = driver.execute_script("return document.documentElement.scrollHeight")
        shot = driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True,
             "clip": {"x": 0, "y": 0, "width": width, "height": page_height, "scale": 1}},
        )  # fmt: skip
        Path(out).write_bytes(base64.b64decode(shot["data"]))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("out")
    parser.add_argument("--width", type=int, default=1700)
    parser.add_argument("--height", type=int, default=1900, help="the browser window's height")
    parser.add_argument("--viewport", action="store_true", help="only what the window shows, not the whole page")
    args = parser.parse_args()
    main(args.url, args.out, args.width, args.height, not args.viewport)
