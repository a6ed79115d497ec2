#!/usr/bin/env python3
"""keet serve's web UI in real headless Chromium (Debian chromium, chromium-driver,
python3-selenium): start keet serve on a free loopback port, upload a report
through the page's file input (the drop zone's input), wait for the job, read the
diagnosis on the page, compare two uploads, upload a timeline and see the run's
verdicts and picture, upload an .nsys-rep the server cannot export and read
what to do on its job row, and keep screenshots. Along the way: each job and
comparison has its route (#/job/ID, #/compare/BEFORE/AFTER), Back and Forward
and a fresh tab on a copied link show the same thing, the uploaded file's name
(a hostile one) stays text, kinds are told apart, the page ranks kernels by the
report's folds, and the report's frame is as tall as its document.

Usage: ui_test.py --keet BUILD/keet --report FILE [--timeline RUN.sqlite] [--fixtures DIR] --out DIR
Exit 0 passed, 1 failed, 77 skipped (no chromium, chromedriver or selenium).
"""
import argparse, json, os, re, shutil, signal, subprocess, sys, tempfile, time, urllib.request

SKIP = 77
# Sanitizer reports of keet serve and its jobs (an ASan keet writes them under
# $KEET_SANITIZER_REPORTS, tools/keet/sanitizer_hooks.cc): any fails the test.
sanitizer_reports = []


def skip(why):
    print(f"SKIPPED: {why} (scripts/bootstrap installs chromium, chromium-driver and python3-selenium)")
    sys.exit(SKIP)


def start_server(keet, data_dir, log_path, reports_dir):
    log = open(log_path, "w")
    env = dict(os.environ, KEET_SANITIZER_REPORTS=reports_dir)
    proc = subprocess.Popen([keet, "serve", "--port", "0", "--data-dir", data_dir, "--workers", "2", "--db", data_dir + "/history.sqlite"],
                            stdout=subprocess.DEVNULL, stderr=log, env=env)
    for _ in range(200):
        time.sleep(0.05)
        text = open(log_path).read()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", text)
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
    proc.kill()
    sys.exit(f"keet serve did not start: {open(log_path).read()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keet", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeline", help="an Nsight Systems export to upload: the run's verdicts and its picture")
    ap.add_argument("--oracle", help="../shared/tools/ncu-oracle: its NVIDIA sample report is uploaded when present")
    ap.add_argument("--fixtures", help="../shared/fixtures/public: a report whose kernel folds differ from its names")
    a = ap.parse_args()
    if a.oracle and os.access(a.oracle, os.X_OK):
        examples = subprocess.run([a.oracle, "--examples"], capture_output=True, text=True).stdout.strip()
        sample = os.path.join(examples, "uncoalescedGlobalAccesses", "addConstDouble3.ncu-rep")
        if os.path.isfile(sample):
            a.report = sample
    print(f"uploading {a.report}")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    if not chromium:
        skip("chromium is not installed")
    if not driver_path:
        skip("chromedriver (Debian chromium-driver) is not installed")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        from selenium.common.exceptions import StaleElementReferenceException
    except ImportError:
        skip("python3-selenium is not installed")

    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="keet-ui-")
    reports = os.path.join(work, "sanitizer")
    os.makedirs(reports)
    proc, url = start_server(a.keet, os.path.join(work, "data"), os.path.join(a.out, "ui-serve.log"), reports)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000",
                 f"--user-data-dir={work}/profile", "--no-first-run", "--disable-extensions", "--disable-background-networking"):
        opts.add_argument(flag)
    browser = None
    try:
        browser = webdriver.Chrome(service=Service(driver_path), options=opts)
        browser.set_page_load_timeout(30)
        # The page re-renders its job list every 2 s: an element a condition
        # found may be replaced before it is read, and the condition is tried again.
        wait = WebDriverWait(browser, 60, ignored_exceptions=[StaleElementReferenceException])

        def api(path):
            with urllib.request.urlopen(url + path, timeout=10) as r:
                return json.load(r)

        def route():
            return browser.execute_script("return location.hash")

        def routed_job():  # the job id of a #/job/ID route, else None
            m = re.fullmatch(r"#/job/([0-9a-f]{32})", route())
            return m[1] if m else None

        def in_report(js):  # a script of the page's reading the report frame's document `d`
            return browser.execute_script("const f = document.getElementById('report'), d = f.contentDocument;" + js)

        def report_fits():  # the frame is as tall as its document: no scroll inside the page
            return in_report("return !!(d && d.body && d.body.children.length) && "
                         "f.clientHeight + 1 >= d.documentElement.scrollHeight;")

        def detail(id_):
            return browser.find_element(By.ID, id_).text

        browser.get(url + "/")
        wait.until(lambda b: "keet" in b.find_element(By.ID, "server-info").text)

        # Upload through the drop zone's file input, as a drop would.
        browser.find_element(By.ID, "file").send_keys(os.path.abspath(a.report))
        wait.until(lambda b: detail("detail-state").startswith("analyze · done"))
        first = wait.until(lambda b: routed_job())
        wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")) >= 1)
        ranking = browser.find_element(By.ID, "ranking").text
        diagnosis = browser.find_element(By.ID, "diagnosis").text
        print("ranking:", ranking.replace("\n", " | ")[:400])
        print("diagnosis:", diagnosis.replace("\n", " | ")[:400])
        assert "memory" in ranking, "the ranked kernels show the bottleneck class"
        assert "memory-bound" in diagnosis, "the per-kernel diagnosis shows the bottleneck summary"
        assert browser.find_elements(By.CSS_SELECTOR, "#diagnosis .finding"), "findings are listed"
        assert "launches" in ranking, "the ranking counts the launches each row folds"
        # Evidence reads as labelled, formatted values (the metric name is the tooltip).
        assert re.search(r"throughput: \d+\.\d%", diagnosis), "evidence shows labelled percentages"
        assert "pct_of_peak_sustained" not in diagnosis, "raw metric names stay out of the text"
        # The HTML report (with its charts) is in the sandboxed frame.
        frame = browser.find_element(By.ID, "report")
        assert frame.get_attribute("sandbox") == "allow-same-origin", "the report frame runs no script"
        wait.until(lambda b: report_fits())
        browser.switch_to.frame(frame)
        wait.until(lambda b: b.find_elements(By.TAG_NAME, "svg"))
        charts = len(browser.find_elements(By.TAG_NAME, "svg"))
        browser.switch_to.default_content()
        print(f"charts in the report frame: {charts}")
        assert charts >= 1
        # The job list shows it done.
        jobs = browser.find_element(By.ID, "jobs").text
        assert "done" in jobs, jobs
        browser.execute_script("window.scrollTo(0, 0)")
        shot = os.path.join(a.out, "keet-ui.png")
        browser.save_screenshot(shot)
        print(f"screenshot: {shot}")
        # At 800 px the page is one column and nothing scrolls sideways.
        browser.set_window_size(800, 1000)
        wait.until(lambda b: b.execute_script(
            "return document.documentElement.scrollWidth <= document.documentElement.clientWidth;"))
        browser.save_screenshot(os.path.join(a.out, "keet-ui-800px.png"))
        browser.set_window_size(1400, 1000)

        # Before/after: a second upload, then compare the two. Untouched, the
        # selects start on two different jobs (after: the newest).
        browser.find_element(By.ID, "file").send_keys(os.path.abspath(a.report))
        wait.until(lambda b: b.execute_script(
            "const b4 = document.getElementById('before'), af = document.getElementById('after');"
            "return b4.options.length >= 2 && b4.value !== '' && b4.value !== af.value "
            "&& af.value === af.options[0].value;"))
        # The same report on both sides is refused with a sentence, not diffed.
        browser.execute_script(
            "const b4 = document.getElementById('before');"
            "b4.value = document.getElementById('after').value;"
            "b4.dispatchEvent(new Event('change'));")
        browser.find_element(By.ID, "compare-go").click()
        wait.until(lambda b: "two different reports" in b.find_element(By.ID, "upload-status").text)
        # Read and set in one script: the job list refresh rebuilds the options every
        # 2 s, so an option element found by one command can be stale by the next.
        wait.until(lambda b: b.execute_script(
            "const o = document.querySelectorAll('#before option');"
            "if (o.length < 2) return false;"
            "document.getElementById('before').value = o[1].value;"
            "document.getElementById('after').value = o[0].value;"
            "return true;"))
        browser.find_element(By.ID, "compare-go").click()
        wait.until(lambda b: "Before / after" in b.find_element(By.ID, "diagnosis").text)
        wait.until(lambda b: "unchanged" in b.find_element(By.ID, "diagnosis").text)
        pairs_table = browser.find_element(By.ID, "diff-pairs").text
        assert "paired by" in pairs_table and "name" in pairs_table, pairs_table
        compare_route = route()
        assert re.fullmatch(r"#/compare/[0-9a-f]{32}/[0-9a-f]{32}", compare_route), compare_route
        compare_title = detail("detail-title")
        wait.until(lambda b: report_fits())
        browser.save_screenshot(os.path.join(a.out, "keet-ui-compare.png"))

        # Explicit pairs: a malformed one is refused on the page; kernel 0 with
        # kernel 0 makes a diff job of its own whose table says the pair was forced.
        browser.find_element(By.ID, "pairs").send_keys("first:second")
        browser.find_element(By.ID, "compare-go").click()
        wait.until(lambda b: "pairs are before:after" in b.find_element(By.ID, "upload-status").text)
        browser.find_element(By.ID, "pairs").clear()
        browser.find_element(By.ID, "pairs").send_keys("0:0")
        browser.find_element(By.ID, "compare-go").click()
        wait.until(lambda b: "(pairs 0:0)" in b.find_element(By.ID, "detail-title").text)
        wait.until(lambda b: "your pairs (--pair)" in b.find_element(By.ID, "diagnosis").text)
        assert route() == compare_route + "?pairs=0:0", route()
        browser.save_screenshot(os.path.join(a.out, "keet-ui-compare-pairs.png"))
        # Back: the comparison without pairs again (the same diff job, not a new
        # one); Forward: the one with them.
        diffs = sum(j["kind"] == "diff" for j in api("/api/v1/jobs?limit=100")["jobs"])
        browser.back()
        wait.until(lambda b: route() == compare_route and detail("detail-title") == compare_title)
        wait.until(lambda b: "paired by" in b.find_element(By.ID, "diagnosis").text
                   and "your pairs" not in b.find_element(By.ID, "diagnosis").text)
        browser.forward()
        wait.until(lambda b: "(pairs 0:0)" in detail("detail-title"))
        assert sum(j["kind"] == "diff" for j in api("/api/v1/jobs?limit=100")["jobs"]) == diffs, "Back queued a diff"

        # NVIDIA's fix renames the kernel (addConstDouble3 -> addConstDouble):
        # the only kernel of each report pairs, and the table says so.
        renamed = os.path.join(os.path.dirname(a.report), "addConstDouble.ncu-rep")
        if os.path.basename(a.report) == "addConstDouble3.ncu-rep" and os.path.isfile(renamed):
            browser.find_element(By.ID, "file").send_keys(renamed)
            # Read and set in one script: the job list refresh rebuilds the options every 2 s.
            fixed = wait.until(lambda b: b.execute_script(
                "const o = [...document.querySelectorAll('#after option')]"
                ".find((o) => o.textContent.startsWith('addConstDouble.ncu-rep'));"
                "if (o) document.getElementById('after').value = o.value;"
                "return o ? o.value : null;"))
            print(f"after: job {fixed}")
            browser.find_element(By.ID, "pairs").clear()
            browser.find_element(By.ID, "compare-go").click()
            wait.until(lambda b: "addConstDouble3.ncu-rep vs addConstDouble.ncu-rep" == b.find_element(By.ID, "detail-title").text)
            wait.until(lambda b: "the only kernel of each report: the kernel names differ"
                       in b.find_element(By.ID, "diagnosis").text)
            print("renamed:", browser.find_element(By.ID, "diff-pairs").text.replace("\n", " | ")[:300])
            browser.save_screenshot(os.path.join(a.out, "keet-ui-compare-renamed.png"))

        # A whole run: an Nsight Systems export gets the run's verdicts, and
        # the report frame draws the streams over time.
        if a.timeline:
            browser.find_element(By.ID, "file").send_keys(os.path.abspath(a.timeline))
            wait.until(lambda b: b.find_element(By.ID, "detail-title").text == os.path.basename(a.timeline))
            wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#run-verdicts li"))
            # A run is a timeline job, not an analysis (nor offered to Compare).
            wait.until(lambda b: detail("detail-state").startswith("timeline · done"))
            run_id = routed_job()
            assert api(f"/api/v1/jobs/{run_id}")["kind"] == "timeline"
            assert not browser.execute_script(
                f"return [...document.querySelectorAll('#after option')].some((o) => o.value === '{run_id}')")
            verdicts = browser.find_element(By.ID, "run-verdicts").text
            print("run verdicts:", verdicts.replace("\n", " | ")[:300])
            assert "The GPU sits idle" in verdicts, verdicts
            assert browser.find_element(By.ID, "ranking-box").get_attribute("hidden") is not None
            frame = browser.find_element(By.ID, "report")
            browser.switch_to.frame(frame)
            wait.until(lambda b: "device 0 kernels" in b.find_element(By.TAG_NAME, "svg").text)
            browser.switch_to.default_content()
            # Its page is styled as the kernels' (a header and a card with the
            # run's facts as a list), not a preformatted block.
            assert in_report("return d.querySelector('header h1').textContent;") == "keet timeline"
            assert in_report("return d.querySelector('header p').textContent;").startswith(os.path.basename(a.timeline))
            assert in_report("return d.querySelectorAll('section.card.timeline > ul.facts li').length;") >= 1
            assert not in_report("return d.querySelector('section.timeline > h2 + pre');"), "the header is not a <pre>"
            wait.until(lambda b: report_fits())
            browser.save_screenshot(os.path.join(a.out, "keet-ui-timeline.png"))

        # An .nsys-rep the server cannot export (it has no nsys here; a real
        # nsys refuses these bytes) fails, and its row in the job list says
        # what to upload instead, in full, not only in a tooltip.
        trace = os.path.join(work, "trace.nsys-rep")
        with open(trace, "wb") as f:
            f.write(b"NVIDIA Tegra Profiler Report 2023@4@4@54-3332\n\x0b" + b"x" * 64)
        browser.find_element(By.ID, "file").send_keys(trace)
        failed = wait.until(lambda b: next((r.text for r in b.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
                                            if r.text.startswith("trace.nsys-rep") and "failed" in r.text), None))
        print("failed .nsys-rep:", failed.replace("\n", " | ")[:400])
        assert "upload its SQLite export instead" in failed, failed
        assert "nsys export --type sqlite --output trace.sqlite trace.nsys-rep" in failed, failed
        browser.save_screenshot(os.path.join(a.out, "keet-ui-nsys-rep.png"))

        # A report under a hostile file name: the name is kept (job row, title,
        # the report's own header), as text only. With the fixtures, a report
        # whose launches fold into more groups than it has kernel names: the
        # page ranks one row per fold, as the report below diagnoses them.
        source = os.path.join(a.fixtures or "", "bwd29__self-join-MiSTIC", "profile4.out.ncu-rep")
        if not (a.fixtures and os.path.isfile(source)):
            source = a.report
        hostile = "team's <b>run & \"<img src=x onerror=alert(1)>\".ncu-rep"
        named = os.path.join(work, hostile)
        shutil.copyfile(source, named)
        browser.find_element(By.ID, "file").send_keys(named)
        wait.until(lambda b: detail("detail-title") == hostile and detail("detail-state").startswith("analyze · done"))
        named_id = routed_job()
        wait.until(lambda b: report_fits())
        assert in_report("return d.querySelector('header p').textContent;").startswith(hostile + " · ")
        row = wait.until(lambda b: next((r for r in b.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
                                         if r.get_attribute("data-id") == named_id), None))
        assert row.text.startswith(hostile), row.text
        assert not browser.find_elements(By.CSS_SELECTOR, "#jobs b, #jobs img, #detail-title *")
        doc = api(f"/api/v1/jobs/{named_id}/result?format=json")
        folds = len(doc["launch_folds"])
        names = len({k["name"] for k in doc["kernels"]})
        rows = len(browser.find_elements(By.CSS_SELECTOR, "#ranking tbody tr"))
        sections = in_report("return [...d.querySelectorAll('section[id]')].filter((s) => /^k\\d+$/.test(s.id)).length;")
        print(f"ranking: {rows} rows, {folds} folds, {sections} report sections, {names} kernel names")
        assert rows == folds == sections, (rows, folds, sections)
        assert in_report("return d.getElementById('kernel-ranking').offsetHeight;") == 0, "one ranking on the page"
        browser.save_screenshot(os.path.join(a.out, "keet-ui-named.png"))

        # Any failed job says why on its row, without a click (not only an
        # .nsys-rep): bytes that are no report.
        broken = os.path.join(work, "broken.ncu-rep")
        with open(broken, "wb") as f:
            f.write(b"these bytes are no Nsight Compute report\n" * 4)
        browser.find_element(By.ID, "file").send_keys(broken)
        broken_id = wait.until(lambda b: routed_job() if routed_job() != named_id else None)
        reason = wait.until(lambda b: next((r.find_element(By.CLASS_NAME, "job-error").text
                                            for r in b.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
                                            if r.get_attribute("data-id") == broken_id and "failed" in r.text), None))
        print("failed report:", reason)
        assert len(reason) > 10, reason

        # Back and Forward between the two jobs' routes.
        browser.back()
        wait.until(lambda b: routed_job() == named_id and detail("detail-title") == hostile)
        browser.forward()
        wait.until(lambda b: routed_job() == broken_id and detail("detail-title") == "broken.ncu-rep")

        # Copied links opened in a fresh tab: the same job, the same comparison
        # (the diff job already made answers; none is queued).
        diffs = sum(j["kind"] == "diff" for j in api("/api/v1/jobs?limit=100")["jobs"])
        main_tab = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(url + "/" + "#/job/" + named_id)
        wait.until(lambda b: detail("detail-title") == hostile and detail("detail-state").startswith("analyze · done"))
        wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")) == folds)
        browser.get(url + "/" + compare_route)
        browser.refresh()  # a hash change alone is no fresh load
        wait.until(lambda b: detail("detail-title") == compare_title and "paired by" in detail("diagnosis"))
        assert sum(j["kind"] == "diff" for j in api("/api/v1/jobs?limit=100")["jobs"]) == diffs, "the link queued a diff"
        browser.close()
        browser.switch_to.window(main_tab)

        # History view for a tag: nothing recorded yet, said plainly.
        browser.find_element(By.ID, "history-tag").send_keys("main")
        browser.find_element(By.ID, "history-go").click()
        wait.until(lambda b: "no recorded runs" in b.find_element(By.ID, "history").text)
        print("PASSED")
        return 0
    finally:
        if browser:
            browser.quit()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        for name in sorted(os.listdir(reports)):
            with open(os.path.join(reports, name)) as f:
                sanitizer_reports.append(f.read())
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    rc = main()
    for text in sanitizer_reports:
        print("FAILED: sanitizer report of keet serve or one of its jobs:\n" + text)
    sys.exit(1 if sanitizer_reports else rc)
