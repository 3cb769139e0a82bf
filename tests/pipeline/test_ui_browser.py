"""The web UI in a real browser: `dagster dev` driven by headless Chromium.

A module-scoped fixture prepares a throw-away DAGSTER_HOME (dagster.yaml from
`pipeline.instance.ensure_dagster_home`) and a tiny synthetic settings file (symbols AAA and
BBB, years 2000-2002), registers the symbols with `python -m pipeline.cli symbols sync`, then
starts `dagster dev -w workspace.yaml` from the repository root on a free port, in its own
process group, and waits (bounded) until `/server_info` answers. At the end the whole group
gets SIGTERM, then SIGKILL for whatever is left (also when a test fails).

Selenium drives Debian's Chromium through /usr/bin/chromedriver (never Selenium Manager, no
browser download). The tests, in order:

1. the Assets catalog lists every asset of `pipeline.definitions.ALL_ASSETS`;
2. one partition, AAA|2001, of raw_bars is materialized from the UI: asset page ->
   "Materialize..." -> symbol AAA in the partition picker, year 2001 -> "Launch 1 run"; the
   run is then opened from the Runs page and watched until its status reads "Success"
   (and exactly that partition's Parquet file exists);
3. the global asset lineage, every group expanded and zoomed out until every asset is on
   screen, is saved as a screenshot, ui_asset_graph.png, in $TRADELAB_ARTIFACTS if set, else
   in the pytest tmp folder (a failing test also leaves ui_failure_<test>.png there);
4. experiments side by side: the fixture writes the reports of two experiments, `baseline`
   and `trees` (tests/experiment_reports.py), and runs `python -m pipeline.cli report` before
   the server starts; the Plots tab of experiment_summary draws h7_auc, h7_rank_ic and
   backtest_sharpe with the experiments' names on the points (ui_experiments_plots.png), and
   the report file its metadata links to opens in the browser as one page showing every part
   with its images (ui_experiment_report.png).

The UI is found by visible text and ARIA (roles, icon labels), not CSS class names. Without
chromium/chromedriver the module skips; `.ci/browser.sh` installs them (apt-get), and
TRADELAB_REQUIRE_BROWSER=1 turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from pipeline.ui import group_alive  # the launcher's own check of a process group

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).parent / "dagster")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL_HINT = "run `.ci/browser.sh` (apt-get install chromium chromium-driver)"

SYMBOLS = ["AAA", "BBB"]
PARTITION = ("AAA", 2001)
SERVER_START_S = 120   # dagster dev: webserver, daemon and code server up
PAGE_S = 60            # a page or a dialog shows what it should
RUN_S = 240            # the launched run reaches a final status

_MISSING = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
_REASON = f"headless Chromium needed for the UI test: {', '.join(_MISSING)} missing; {INSTALL_HINT}"
if _MISSING and os.environ.get("TRADELAB_REQUIRE_BROWSER") != "1":
    pytest.skip(_REASON, allow_module_level=True)

selenium = pytest.importorskip("selenium", reason=f"selenium is not installed (pip install -e '.[dev]'); {INSTALL_HINT}")
from selenium import webdriver
from selenium.common.exceptions import (
    ElementClickInterceptedException,
    ElementNotInteractableException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait


def _asset_names() -> list[str]:
    from pipeline.definitions import ALL_ASSETS

    return sorted({key.to_user_string() for a in ALL_ASSETS for key in a.keys})


def _group_names() -> set[str]:
    from pipeline.definitions import ALL_ASSETS

    return {group for a in ALL_ASSETS for group in a.group_names_by_key.values()}


# ---------------------------------------------------------------- the server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _default_sigint() -> None:
    # dagster dev maps SIGTERM onto its SIGINT handler: a SIGINT ignored by whoever started
    # pytest (a background job of a non-interactive shell) would make SIGTERM a no-op.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _log_tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "<no log>"


def _wait_for_server(base: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"dagster dev exited with {proc.returncode} before serving:\n{_log_tail(log)}")
        try:
            with urllib.request.urlopen(f"{base}/server_info", timeout=3) as resp:
                if resp.status == 200 and "dagster_webserver_version" in json.loads(resp.read()):
                    return
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = repr(exc)
        time.sleep(0.5)
    pytest.fail(f"dagster dev did not answer {base}/server_info within {SERVER_START_S} s ({last}):\n{_log_tail(log)}")


def _stop_group(proc: subprocess.Popen, grace_s: float = 30.0) -> None:
    """SIGTERM to the process group of `dagster dev` (webserver, daemon, code server, run
    workers), wait for it to empty, SIGKILL what is left."""
    pgid = proc.pid  # start_new_session: the leader's pid is the group id
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not group_alive(pgid):
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    from pipeline.instance import ensure_dagster_home

    if _MISSING:  # TRADELAB_REQUIRE_BROWSER=1: each test fails (the rest of the suite still runs)
        pytest.fail(f"{_REASON} (TRADELAB_REQUIRE_BROWSER=1)", pytrace=False)

    tmp = tmp_path_factory.mktemp("ui")
    cfg = tmp / "settings.yaml"
    cfg.write_text(yaml.safe_dump({
        "paths": {"data": "data", "reports": "reports", "models": "models"},
        "years": {"start": 2000, "end": 2002},
        "universe": {"source": "synthetic", "synthetic": {"symbols": SYMBOLS, "seed": 3, "end_date": "2002-12-31"}},
        # nothing but the run the test launches: no chained follow-up runs from the daemon
        "automation": {"build_chain_sensor": False},
    }))
    home = tmp / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAGSTER_HOME", str(home))
        assert ensure_dagster_home() == home.resolve()
    assert (home / "dagster.yaml").is_file()
    # The first-visit "Join the Dagster community" dialog would cover the page; its Skip
    # button records exactly this file (dagster._core.nux).
    (home / ".nux").mkdir(exist_ok=True)
    (home / ".nux" / "nux.yaml").write_text("seen: 1\n")

    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(home)}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], check=False, cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{len(SYMBOLS)} in all: {', '.join(SYMBOLS)}" in out.stdout

    from tests.experiment_reports import write_experiment

    write_experiment(tmp / "reports", "baseline", auc=0.512, rank_ic=0.011, sharpe=0.42, cagr=0.051)
    write_experiment(tmp / "reports", "trees", auc=0.537, rank_ic=0.043, sharpe=0.77, cagr=0.083,
                     ic_by_year=(0.05, 0.036))
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "report"], check=False, cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "experiment_summary: 2 partition(s) materialized (2 new)" in out.stdout

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp / "dagster_dev.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen([DAGSTER, "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_default_sigint)  # noqa: PLW1509 (no threads yet)
    try:
        _wait_for_server(base, proc, log)
        yield {"base": base, "tmp": tmp, "settings": cfg, "log": log}
    finally:
        _stop_group(proc)


# ---------------------------------------------------------------- the browser


@pytest.fixture(scope="module")
def artifacts(ui) -> Path:
    env = os.environ.get("TRADELAB_ARTIFACTS")
    folder = Path(env).resolve() if env else ui["tmp"] / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def driver(ui):
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1920,1400", "--no-first-run", "--no-default-browser-check"):
        opts.add_argument(arg)
    # An explicit driver path: Selenium Manager is never asked to find or download anything.
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(PAGE_S)
    try:
        yield drv
    finally:
        drv.quit()


@contextlib.contextmanager
def _evidence_on_failure(drv, folder: Path, name: str):
    """A failing step leaves a screenshot and the page's text in the artifacts folder."""
    try:
        yield
    except BaseException:
        stem = folder / f"ui_failure_{name}"
        with contextlib.suppress(Exception):
            drv.save_screenshot(f"{stem}.png")
            Path(f"{stem}.txt").write_text(drv.current_url + "\n\n" + drv.find_element(By.TAG_NAME, "body").text)
        print(f"\nUI failure evidence: {stem}.png and .txt")
        raise


_RETRY = (StaleElementReferenceException, ElementClickInterceptedException, ElementNotInteractableException)


def _wait(drv, timeout: float = PAGE_S) -> WebDriverWait:
    return WebDriverWait(drv, timeout, poll_frequency=0.5, ignored_exceptions=_RETRY)


def _click(wait: WebDriverWait, find, message: str):
    """Find and click in one polled step: a re-rendered (stale) or briefly covered element is
    looked up and clicked again until the wait runs out."""
    def attempt(drv):
        el = find(drv)
        if not el:
            return False
        el.click()
        return el
    return wait.until(attempt, message)


def _shown(scope, xpath: str) -> list:
    out = []
    for el in scope.find_elements(By.XPATH, xpath):
        with contextlib.suppress(StaleElementReferenceException):
            if el.is_displayed():
                out.append(el)
    return out


def _by_text(scope, xpath: str, text: str, *, prefix: bool = False):
    """The first displayed element of `xpath` whose visible text is `text` (or starts with it);
    visible text, because the DOM also holds hidden measuring copies of labels."""
    for el in _shown(scope, xpath):
        with contextlib.suppress(StaleElementReferenceException):
            label = el.text.strip()
            if label == text or (prefix and label.startswith(text)):
                return el
    return False


def _icon_button(scope, icon: str):
    """The last displayed icon-only button whose icon has the ARIA label `icon`."""
    found = [b for b in _shown(scope, f".//button[.//*[@role='img' and @aria-label='{icon}']]") if not b.text.strip()]
    return found[-1] if found else False


def _dismiss_community_dialog(drv) -> None:
    # Belt and braces: the nux.yaml written by the fixture normally keeps it from showing.
    for dialog in _shown(drv, "//*[@role='dialog']"):
        if "Join the Dagster community" in dialog.text:
            skip = _by_text(dialog, ".//button", "Skip")
            if skip:
                skip.click()


# Asset names shown inside the asset graph's SVG and really on screen: the element at the
# centre of the label is the label (or its node), not the page header or nothing at all.
_ON_SCREEN_IN_GRAPH = """
const names = new Set(arguments[0]);
const counts = {};
for (const el of document.querySelectorAll('svg *')) {
  if (el.childElementCount) continue;
  const t = (el.textContent || '').trim();
  if (!names.has(t)) continue;
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) continue;
  const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (top && (top === el || el.contains(top) || top.contains(el))) counts[t] = (counts[t] || 0) + 1;
}
return counts;
"""

# Links to an asset's page (/assets/<name>) with the name as their visible text; then every
# scrollable container moves a screen down, for a list that renders only what is in view.
_CATALOG_LINKS = """
const names = new Set(arguments[0]);
const found = [];
for (const a of document.querySelectorAll('a[href]')) {
  const t = a.innerText.trim().split('\\n')[0].trim();
  if (names.has(t) && decodeURIComponent(new URL(a.href).pathname).endsWith('/assets/' + t)) found.push(t);
}
for (const el of document.querySelectorAll('*')) {
  const s = getComputedStyle(el);
  if (el.scrollHeight > el.clientHeight + 4 && /(auto|scroll)/.test(s.overflowY)) el.scrollTop += el.clientHeight * 0.8;
}
return found;
"""


# ---------------------------------------------------------------- the tests


def test_catalog_lists_every_asset_of_the_graph(driver, ui, artifacts):
    names = _asset_names()
    assert len(names) == 18, names  # the 16 stages, strategy_search and experiment_summary
    seen: set[str] = set()

    def all_listed(drv):
        _dismiss_community_dialog(drv)
        seen.update(drv.execute_script(_CATALOG_LINKS, names))
        return seen >= set(names)

    with _evidence_on_failure(driver, artifacts, "catalog"):
        driver.get(ui["base"] + "/assets")
        try:
            _wait(driver).until(all_listed)
        except TimeoutException:
            pytest.fail(f"the Assets catalog does not list {sorted(set(names) - seen)} within {PAGE_S} s")


def _launch_dialog(drv):
    return next((x for x in _shown(drv, "//*[@role='dialog']") if "Launch runs to materialize raw_bars" in x.text), False)


# On the Runs page: the run-id link of the run whose row mentions `key` (the row: the largest
# ancestor of the link holding no link to another run).
_RUN_LINK = """
const key = arguments[0];
for (const a of document.querySelectorAll('a[href*="/runs/"]')) {
  if (!a.innerText.trim() || !a.getClientRects().length) continue;
  let row = a, up = a.parentElement;
  while (up && [...up.querySelectorAll('a[href*="/runs/"]')].every(x => x.href === a.href)) { row = up; up = up.parentElement; }
  if (row.innerText.includes(key)) return a;
}
return null;
"""


def _run_link(key: str):
    return lambda drv: drv.execute_script(_RUN_LINK, key) or False


def _final_status(drv):
    """On a run page: the run's status tag once the run is over."""
    for status in ("Success", "Failure", "Canceled"):
        if _shown(drv, f"//*[normalize-space(text())='{status}']"):
            return status
    return False


def test_materialize_one_partition_from_the_ui(driver, ui, artifacts):
    symbol, year = PARTITION
    key = f"{symbol}|{year}"
    wait = _wait(driver)
    with _evidence_on_failure(driver, artifacts, "materialize"):
        driver.get(ui["base"] + "/assets/raw_bars")
        _dismiss_community_dialog(driver)
        # the asset page's launch button ("Materialize…" for a partitioned asset); a click that
        # lands before the page is live on a loaded machine opens nothing, so it is repeated
        # (every 5 s) until the dialog shows
        def launch_dialog_opened(d):
            if dialog := _launch_dialog(d):
                return dialog
            if button := _by_text(d, "//button", "Materialize", prefix=True):
                button.click()
            return False

        WebDriverWait(driver, PAGE_S, poll_frequency=5, ignored_exceptions=_RETRY).until(
            launch_dialog_opened, "no Materialize button, or the launch dialog did not open")

        # symbol: the dynamic-partition picker, a popover menu of the registered symbols
        picker = ".//*[@aria-haspopup][contains(., 'Select a partition')]"
        _click(wait, lambda d: next(iter(_shown(_launch_dialog(d), picker)), False), "no symbol picker in the dialog")
        _click(wait, lambda d: _by_text(d, "//*[@role='menuitem']", symbol), f"{symbol} is not offered")
        for box in _shown(driver, "//input[@placeholder='Filter partitions']"):
            box.send_keys(Keys.ESCAPE)  # closes the picker's popover, not the dialog
        wait.until(lambda d: not _by_text(d, "//*[@role='menuitem']", symbol), "the symbol picker stayed open")

        # year: the time-window dimension takes typed keys
        year_box = _click(wait, lambda d: next(iter(_shown(_launch_dialog(d), ".//input[starts-with(@placeholder, 'ex:')]")), False),
                          "no year input in the dialog")
        year_box.send_keys(str(year), Keys.TAB)

        wait.until(lambda d: "1 partition" in _launch_dialog(d).text, "the dialog does not count 1 partition")
        text = _launch_dialog(driver).text
        assert symbol in text and "BBB" not in text, text
        _click(wait, lambda d: (b := _by_text(_launch_dialog(d), ".//button", "Launch 1 run")) and b.is_enabled() and b,
               "the dialog does not offer an enabled 'Launch 1 run'")
        wait.until(lambda d: not _launch_dialog(d), "the launch dialog did not close")

        # the run: from the Runs page to the run's own page, watched until it is over
        _click(wait, lambda d: _by_text(d, "//a", "Runs"), "no Runs link in the navigation")
        link = _wait(driver, RUN_S).until(_run_link(key), f"no run of {key} on the Runs page")
        run_url = link.get_attribute("href")
        _click(wait, _run_link(key), f"the run of {key} could not be opened")
        wait.until(lambda d: d.current_url.split("?")[0] == run_url.split("?")[0], f"the run page {run_url} did not open")
        try:
            status = _wait(driver, RUN_S).until(_final_status)
        except TimeoutException:
            pytest.fail(f"the run of {key} did not finish within {RUN_S} s ({driver.current_url})")
        assert status == "Success", f"the run of {key} ended with {status}: {run_url}"
        assert key in driver.find_element(By.TAG_NAME, "body").text  # the run page names its partition
        print(f"\nrun of {key} launched from the UI: {status} ({run_url})")

    # what the run wrote: exactly that partition
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore

    assert DeltaStore(ui["tmp"] / "data").partitions("raw_bars") == [SymbolYear(symbol, int(year))]


def test_asset_graph_shows_every_asset_and_is_saved_as_a_screenshot(driver, ui, artifacts):
    names = _asset_names()
    # an expanded group's title repeats the label of a same-named asset: that name shows twice
    needed = {n: 2 if n in _group_names() else 1 for n in names}
    wait = _wait(driver)
    state: dict = {}

    def all_on_screen(drv):
        counts = drv.execute_script(_ON_SCREEN_IN_GRAPH, names)
        state["missing"] = sorted(n for n in names if counts.get(n, 0) < needed[n])
        if not state["missing"]:
            return True
        zoom_out = _icon_button(drv, "zoom_out")  # about the centre of the view
        if zoom_out:
            zoom_out.click()
        return False

    with _evidence_on_failure(driver, artifacts, "asset_graph"):
        driver.get(ui["base"] + "/asset-groups")
        _dismiss_community_dialog(driver)
        # "Expand all groups" in the graph's settings menu (an icon-only button)
        _click(wait, lambda d: _icon_button(d, "settings"), "no graph settings button")
        item = wait.until(lambda d: _by_text(d, "//*[@role='menuitem']", "Expand all groups", prefix=True)
                          or _by_text(d, "//*[@role='menuitem']", "Collapse all groups", prefix=True),
                          "no 'Expand all groups' in the graph settings")
        if item.text.startswith("Expand"):
            item.click()
            wait.until(lambda d: _by_text(d, "//*[@role='menuitem']", "Collapse all groups", prefix=True),
                       "the groups did not expand")
        # reloaded, the graph lays the expanded groups out and centres them
        driver.refresh()
        try:
            WebDriverWait(driver, PAGE_S, poll_frequency=0.75,
                          ignored_exceptions=_RETRY).until(all_on_screen)
        except TimeoutException:
            pytest.fail(f"the asset graph does not show {state.get('missing')} within {PAGE_S} s")

        shot = artifacts / "ui_asset_graph.png"
        assert driver.save_screenshot(str(shot)), shot
        assert shot.stat().st_size > 10_000
        print(f"\nasset graph screenshot: {shot}")


def test_experiments_side_by_side_in_the_plots_tab_and_the_report_page(driver, ui, artifacts):
    figures = ("h7_auc", "h7_rank_ic", "backtest_sharpe")
    wait = _wait(driver)
    with _evidence_on_failure(driver, artifacts, "experiments"):
        # the partitions are the experiments
        driver.get(ui["base"] + "/assets/experiment_summary?view=partitions")
        _dismiss_community_dialog(driver)
        wait.until(lambda d: _by_text(d, "//*", "baseline") and _by_text(d, "//*", "trees"),
                   "the Partitions tab does not list the experiments baseline and trees")
        # the overview's metadata, by partition, as plots: one chart per figure, the
        # experiments' names on the x axis (drawn in a canvas: the screenshot shows them)
        driver.get(ui["base"] + "/assets/experiment_summary")
        _dismiss_community_dialog(driver)
        for switch in ("Plots", "Partitions"):  # table | plots, then (plots only) partitions | events
            _click(wait, lambda d, s=switch: next(iter(_shown(d, f"//button[normalize-space(.)='{s}']")), False),
                   f"no {switch} switch in the metadata")

        def plotted(drv):
            body = drv.find_element(By.TAG_NAME, "body").text
            titles = all(_by_text(drv, "//*", f) for f in figures)
            return titles and "When graphing values by partition" in body and len(drv.find_elements(By.TAG_NAME, "canvas")) >= 15

        try:
            _wait(driver, PAGE_S).until(plotted)
        except TimeoutException:
            pytest.fail(f"the metadata plots by partition do not show {figures} within {PAGE_S} s")
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", _by_text(driver, "//*", "backtest_max_drawdown"))
        shot = artifacts / "ui_experiments_plots.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        print(f"\nexperiments plots screenshot: {shot}")

    report = ui["tmp"] / "reports" / "trees" / "experiment_summary" / "report.html"
    with _evidence_on_failure(driver, artifacts, "experiment_report"):
        driver.get(report.resolve().as_uri())
        text = driver.find_element(By.TAG_NAME, "body").text
        for heading in ("Experiment trees", "Headline figures", "Equity against the benchmark, and drawdown",
                        "Rank IC by year", "Deciles (overall)", "Importance of the meta models' columns"):
            assert heading in text, heading
        loaded = driver.execute_script(
            "return [...document.images].map(i => [i.src.slice(0, 22), i.complete && i.naturalWidth > 0])")
        assert loaded == [["data:image/png;base64,", True]] * 4, loaded
        driver.set_window_size(1200, 4200)
        shot = artifacts / "ui_experiment_report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        driver.set_window_size(1920, 1400)
        print(f"\nexperiment report screenshot: {shot}")
