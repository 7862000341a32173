#!/usr/bin/env python3
"""The review page in a real browser (issue 18 item 4): Debian's chromium, headless, driven by
chromium-driver through python3-selenium. A simulated pair is differenced into an SQLite
store (a stand-in score written with sqlite3, so no model is needed), two reviewers are
added, and `tide review serve` runs on a free port. Alice is refused with a bad token, signs
in, labels 20 candidates (10 with the buttons, 10 with the keys r/b/u), tags one, reloads and
sees her labels; Bob signs in in a fresh session and disagrees on 5 of them, which then fill
the page's disagreement queue; a request with a bad token and a write without the CSRF token
are refused. The labels are checked in the store with sqlite3. A screenshot of the page is
kept under the build directory (its path printed). Skips (77) without chromium,
chromium-driver or selenium."""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    print("SKIP: no python3-selenium")
    sys.exit(77)

DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
BROWSER = shutil.which("chromium") or "/usr/bin/chromium"
if not (os.path.exists(DRIVER) and os.path.exists(BROWSER)):
    print("SKIP: no chromium / chromium-driver")
    sys.exit(77)

TIDE = os.environ["TIDE_BIN"]
tmp = tempfile.mkdtemp(prefix="tide-review-page.")
art = os.path.join(os.getcwd(), "artifacts")
os.makedirs(art, exist_ok=True)
failures = []


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        failures.append(what)


def run(*args):
    return subprocess.run([TIDE, *args], check=True, capture_output=True, text=True).stdout


run("sim", "--seed", "777", "--width", "512", "--height", "512", "--nstars", "180", "--ngal",
    "30", "--ntransient", "20", "--nvariable", "20", "--nmoving", "2", "--nsatellite", "2",
    "-o", f"{tmp}/e1.fits", "--epoch2", f"{tmp}/e2.fits")
db = f"{tmp}/c.db"
run("diff", f"{tmp}/e2.fits", f"{tmp}/e1.fits", "-o", f"{tmp}/d", "--store", db,
    "--log-level", "error")
con = sqlite3.connect(db)
con.execute("UPDATE candidates SET score = ((id * 37) % 100) / 100.0")
con.commit()
ncand = con.execute("SELECT count(*) FROM candidates").fetchone()[0]
con.close()
assert ncand >= 25, ncand
tok_a = run("review", "add-reviewer", "--store", db, "alice").strip()
tok_b = run("review", "add-reviewer", "--store", db, "bob").strip()

srv = subprocess.Popen([TIDE, "review", "serve", "--store", db, "--listen", "127.0.0.1:0"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
line = srv.stdout.readline()
port = int(line.rsplit(" ", 1)[1])
url = f"http://127.0.0.1:{port}"


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = BROWSER
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1000", f"--user-data-dir={tempfile.mkdtemp(dir=tmp)}"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service(DRIVER), options=o)


def text(d, id_):
    return d.find_element(By.ID, id_).text


def wait(d, cond, what, timeout=10):
    try:
        WebDriverWait(d, timeout).until(lambda _: cond())
    except Exception:
        check(False, what)


def sign_in(d, token):
    d.get(url + "/")
    wait(d, lambda: d.find_element(By.ID, "token").is_displayed(), "the sign-in form")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.ID, "login").click()


def label_current(d, how, value):
    """Label the shown candidate (button click or key) and wait for the next one."""
    before = text(d, "cand-id")
    status_before = text(d, "status")
    if how == "click":
        d.find_element(By.ID, "btn-" + value).click()
    else:
        d.find_element(By.TAG_NAME, "body").send_keys(value[0])
    wait(d, lambda: text(d, "status") != status_before and text(d, "cand-id") != before,
         f"the label {value} of {before} was not saved")
    return int(before)


def fetch_status(d, method, path, headers):
    return d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {method: arguments[1], headers: arguments[2], credentials: "
        "'same-origin', body: arguments[1] === 'POST' ? '{\"label\":\"real\"}' : undefined})"
        ".then(r => done(r.status)).catch(e => done(String(e)));", url + path, method, headers)


d = browser()
try:
    # a bad token: refused, still the sign-in form
    sign_in(d, "0" * 64)
    wait(d, lambda: "refused" in text(d, "error"), "a bad token was not refused")
    check(d.find_element(By.ID, "token").is_displayed(), "a bad token left the sign-in form")
    check(d.get_cookie("tide_session") is None, "a bad token got a session")
    # alice
    d.find_element(By.ID, "token").clear()
    d.find_element(By.ID, "token").send_keys(tok_a)
    d.find_element(By.ID, "login").click()
    wait(d, lambda: text(d, "cand-id").isdigit(), "alice's review view")
    check(text(d, "who") == "alice", "the page names alice")
    cookie = d.get_cookie("tide_session")
    check(cookie and cookie["httpOnly"] and cookie.get("sameSite") == "Strict",
          f"the session cookie {cookie}")
    stamps = d.find_elements(By.CSS_SELECTOR, "img.stamp")
    check(len(stamps) >= 3, "the stamps")
    wait(d, lambda: all(d.execute_script("return arguments[0].naturalWidth", i) > 0
                        for i in stamps), "the stamps did not load")
    done = {}
    values = ["real", "bogus", "unsure"]
    for k in range(20):
        v = values[k % 3]
        if k == 4:  # tag one
            d.find_element(By.ID, "tags").send_keys("cosmic-ray, edge")
            d.find_element(By.ID, "comment").send_keys("sharp")
        done[label_current(d, "click" if k < 10 else "key", v)] = v
        if k == 4:
            tagged = list(done)[-1]
    check(len(done) == 20, f"{len(done)} candidates labelled")
    d.save_screenshot(os.path.join(art, "review_page.png"))
    # reload: still signed in, the labels are there
    d.refresh()
    wait(d, lambda: text(d, "cand-id").isdigit(), "the review view after a reload")
    for cid in (tagged, list(done)[0], list(done)[15]):
        d.get(f"{url}/#{cid}")
        d.refresh()
        wait(d, lambda: text(d, "cand-id") == str(cid), f"candidate {cid} after a reload")
        check(text(d, "my-label") == done[cid], f"candidate {cid}: {text(d, 'my-label')} "
              f"shown, {done[cid]} given")
    d.get(f"{url}/#{tagged}")
    d.refresh()
    wait(d, lambda: text(d, "cand-id") == str(tagged), "the tagged candidate")
    check(d.find_element(By.ID, "tags").get_attribute("value") == "cosmic-ray, edge",
          "the tags after a reload")
    d.get(url + "/summary")
    wait(d, lambda: "20" in text(d, "summary"), "alice's summary shows 20 labels")
    # refused: a bad bearer token, a cookie write without (or with a wrong) CSRF token
    d.get(url + "/")
    wait(d, lambda: text(d, "cand-id").isdigit(), "the review view")
    check(fetch_status(d, "GET", "/api/queue", {"Authorization": "Bearer " + "1" * 64}) == 401,
          "a bad bearer token was not refused")
    check(fetch_status(d, "POST", f"/api/candidates/{tagged}/label", {}) == 403,
          "a write without the CSRF token was not refused")
    check(fetch_status(d, "POST", f"/api/candidates/{tagged}/label",
                       {"X-CSRF-Token": "0" * 64}) == 403, "a write with a bad CSRF token")
finally:
    d.quit()

# bob, in a fresh browser: disagrees with alice on five real/bogus ones
d = browser()
try:
    sign_in(d, tok_b)
    wait(d, lambda: text(d, "cand-id").isdigit(), "bob's review view")
    check(text(d, "who") == "bob", "the page names bob")
    against = [c for c, v in done.items() if v in ("real", "bogus")][:5]
    for cid in against:
        d.get(f"{url}/#{cid}")
        d.refresh()
        wait(d, lambda: text(d, "cand-id") == str(cid), f"bob opens {cid}")
        d.find_element(By.TAG_NAME, "body").send_keys("b" if done[cid] == "real" else "r")
        wait(d, lambda: "saved" in text(d, "status"), f"bob's label of {cid}")
    d.get(url + "/")
    wait(d, lambda: text(d, "cand-id").isdigit(), "bob's queue")
    from selenium.webdriver.support.select import Select
    Select(d.find_element(By.ID, "queue-by")).select_by_visible_text("disagreement")
    wait(d, lambda: "disagreement queue" in text(d, "status"), "the disagreement queue")
    ids = d.execute_script(
        "return fetch('/api/queue?by=disagreement').then(r => r.json()).then(j => j.ids)")
    check(set(against) <= set(ids), f"the disagreements {against} not all in the queue {ids}")
    check(int(text(d, "cand-id")) in against, "the page's disagreement queue starts elsewhere")
    d.save_screenshot(os.path.join(art, "review_page_disagreement.png"))
finally:
    d.quit()
    srv.terminate()
    srv.wait()

con = sqlite3.connect(db)
rows = con.execute("SELECT l.candidate_id, r.name, l.label, l.tags, l.comment, l.time FROM labels "
                   "l JOIN reviewers r ON r.id = l.reviewer_id").fetchall()
con.close()
mine = {c: v for c, n, v, _, _, _ in rows if n == "alice"}
check(mine == done, "the store's labels of alice differ from the clicks and keys")
check(sum(1 for r in rows if r[1] == "bob") == 5, "bob's 5 labels")
check(any(r[0] == tagged and r[3] == "cosmic-ray, edge" and r[4] == "sharp" for r in rows),
      "the tag and comment in the store")
check(all(len(r[5]) == 20 and r[5].endswith("Z") for r in rows), "label times")
print("screenshot:", os.path.join(art, "review_page.png"))
shutil.rmtree(tmp, ignore_errors=True)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
