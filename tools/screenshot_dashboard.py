"""Screenshot a running dashboard with Debian's headless Chromium (the README's docs/dashboard.png).

holistic up --demo --keep-running --dashboard-address 127.0.0.1:8765 &
.venv/bin/python tools/screenshot_dashboard.py "http://127.0.0.1:8765/?window=1h" docs/dashboard.png
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def main(url: str, out: str, width: int = 1700, height: int = 1900) -> None:
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
        while not driver.execute_script("return document.body.dataset.compared") and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        driver.save_screenshot(out)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
