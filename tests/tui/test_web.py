"""`msdoctor monitor RUN --web` in a real browser: Debian's chromium, headless, driven by Selenium.

textual-serve draws the app with xterm.js on a canvas, so the page's DOM holds no text: the test
records what the page's own WebSocket receives (the terminal stream xterm.js draws) and looks for
the culprit there, after the page connected (body.-loaded).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time

import pytest

from tests.tui.conftest import RUNS

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
RECORD_WS = """
(() => {
  const Orig = window.WebSocket;
  window.__msdoctor = "";
  const Wrapped = function (url, protocols) {
    const ws = protocols === undefined ? new Orig(url) : new Orig(url, protocols);
    ws.addEventListener("message", (e) => {
      window.__msdoctor += typeof e.data === "string" ? e.data : new TextDecoder().decode(e.data);
    });
    return ws;
  };
  Wrapped.prototype = Orig.prototype;
  Object.assign(Wrapped, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Wrapped;
})();
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None, reason="chromium / chromedriver not installed (.ci/run installs them)")
def test_web_monitor_shows_the_culprit_in_a_browser(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    pytest.importorskip("textual_serve")
    from selenium.webdriver.chrome.service import Service

    run_dir = tmp_path / "hang"
    shutil.copytree(RUNS / "hang", run_dir)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "msdoctor", "monitor", str(run_dir), "--web", "--port", str(port),
                               "--poll", "0.2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    driver = None
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.2)
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,900"):
            opts.add_argument(a)
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_WS})
        driver.get(f"http://127.0.0.1:{port}/")
        # textual-serve's page (not an error page), its terminal drawn by xterm.js
        assert driver.execute_script("return document.querySelectorAll('.textual-terminal .xterm').length") == 1
        deadline = time.monotonic() + 120
        seen = ""
        while time.monotonic() < deadline:
            seen = driver.execute_script("return window.__msdoctor || ''")
            loaded = driver.execute_script("return document.body.classList.contains('-loaded')")
            if loaded and "culprit: rank 1 (COMM201)" in seen:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the page never showed the culprit; received {len(seen)} chars: {seen[-2000:]!r}")
        assert "COMM201" in seen and "rank 1 hung at step 4" in seen
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
