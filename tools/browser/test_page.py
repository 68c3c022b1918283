"""The review page in a real headless Chromium (tools/browser.sh): search,
clusters, a cluster, a member beside its representative, "not a copy",
"keep this one",
texts that look like HTML, the token, and pages of other origins. The store's documents are generated here."""

import http.server
import json
import os
import random
import re
import shutil
import subprocess
import threading
import urllib.parse
import urllib.request

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

SIMDB = os.environ.get("SIMDB_BIN", "simdb")
SHOTS = os.environ.get("SIMDB_SCREENSHOTS")
WORDS = (
    "国务院 总理 今天 北京 主持 召开 常务 会议 研究 部署 就业 消费 政策 措施 经济 "
    "发展 改革 开放 城市 农村 教育 科技 创新 企业 市场 金融 服务 建设 项目 投资"
).split()


def article(rng, n=120):
    return "".join(rng.choice(WORDS) + ("。" if i % 11 == 10 else "") for i in range(n))


class Server:
    """`simdb serve` on a free loopback port, killed at the end."""

    def __init__(self, db, token=None):
        args = [SIMDB, "serve", str(db), "--addr", "127.0.0.1:0"]
        self.token = token
        if token:
            f = db.parent / "token"
            f.write_text(token + "\n")
            args += ["--token-file", str(f)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        self.base = "http://" + re.search(r"http://(\S+)", line).group(1)
        self.port = int(self.base.rsplit(":", 1)[1])

    def call(self, path, body=None):
        req = urllib.request.Request(self.base + path)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        if body is not None:
            req.add_header("Content-Type", "application/json")
            req.data = json.dumps(body).encode()
        with urllib.request.urlopen(req) as r:
            return r.read().decode()

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def store(tmp_path):
    db = tmp_path / "review.db"
    subprocess.run([SIMDB, "init", str(db), "--keep-texts"], check=True, capture_output=True)
    return db


@pytest.fixture
def server(store):
    s = Server(store)
    rng = random.Random(1)
    texts = [article(rng) for _ in range(6)]
    docs = [{"id": f"a{i}", "text": t} for i, t in enumerate(texts)]
    # Copies: three of the first (one with a word changed), one of the second.
    edited = texts[0].replace(texts[0][:4], "上海浦东", 1)
    docs += [{"id": "a0-copy", "text": texts[0]}, {"id": "a0-edited", "text": edited}]
    docs += [{"id": "a0-again", "text": texts[0]}, {"id": "a1-copy", "text": texts[1]}]
    s.call("/documents", docs)
    s.texts = texts
    yield s
    s.stop()


@pytest.fixture
def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = shutil.which("chromium")
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
              "--host-resolver-rules=MAP foreign.test 127.0.0.1"]:
        o.add_argument(a)
    d = webdriver.Chrome(options=o, service=Service(shutil.which("chromedriver")))
    yield d
    d.quit()


def wait(d, css, n=1):
    WebDriverWait(d, 20).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= n)
    return d.find_elements(By.CSS_SELECTOR, css)


def shot(d, name):
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        d.save_screenshot(os.path.join(SHOTS, name + ".png"))


def test_search_finds_a_copy_and_explains_it(server, browser):
    browser.get(server.base + "/#/search")
    box = wait(browser, "#query-text")[0]
    box.send_keys(server.texts[1])
    browser.find_element(By.ID, "search").click()
    hits = wait(browser, "tr.hit", 2)
    ids = [h.find_element(By.CSS_SELECTOR, "td a").text for h in hits]
    assert sorted(ids) == ["a1", "a1-copy"], ids
    # The explanation: the terms the hit shares with the query.
    assert hits[0].find_elements(By.CSS_SELECTOR, ".shared"), hits[0].text
    shot(browser, "search")


def test_clusters_lead_to_a_cluster_and_why_each_member_is_there(server, browser):
    browser.get(server.base + "/#/clusters")
    rows = wait(browser, "tr.cluster", 2)
    assert rows[0].find_elements(By.CSS_SELECTOR, "td")[1].text == "4"
    shot(browser, "clusters")
    rows[0].find_element(By.CSS_SELECTOR, "td a").click()
    members = wait(browser, "tr.member", 4)
    why = {m.find_elements(By.CSS_SELECTOR, "td")[0].text: m.find_elements(By.CSS_SELECTOR, "td")[1].text
           for m in members}
    assert why["a0"] == "representative", why
    assert why["a0-copy"] == "similarity" and why["a0-edited"] == "similarity", why
    shot(browser, "cluster")


def test_a_cluster_shows_a_member_beside_its_representative_with_the_edit_marked(server, browser):
    browser.get(server.base + "/#/cluster?id=a0")
    members = wait(browser, "tr.member", 4)
    row = next(m for m in members if m.find_elements(By.CSS_SELECTOR, "td")[0].text == "a0-edited")
    row.find_element(By.LINK_TEXT, "compare").click()
    added = wait(browser, "#diff-b ins")
    removed = wait(browser, "#diff-a del")
    # The planted edit: the text's first four characters became 上海浦东.
    assert "".join(e.text for e in added) == "上海浦东"
    assert "".join(e.text for e in removed) == server.texts[0][:4]
    # Each side is its whole text.
    assert browser.find_element(By.ID, "diff-a").text == server.texts[0]
    assert browser.find_element(By.ID, "diff-b").text == server.texts[0].replace(server.texts[0][:4], "上海浦东", 1)
    shot(browser, "diff")


def test_not_a_copy_takes_a_member_out_and_a_rebuild_keeps_it_out(store, browser):
    s = Server(store)
    rng = random.Random(4)
    text = article(rng)
    edited = text.replace(text[:4], "上海浦东", 1)
    s.call("/documents", [{"id": "r", "text": text}, {"id": "m1", "text": text}, {"id": "m2", "text": edited}])
    try:
        browser.get(s.base + "/#/cluster?id=r")
        members = wait(browser, "tr.member", 3)
        row = next(m for m in members if m.find_elements(By.CSS_SELECTOR, "td")[0].text == "m2")
        row.find_element(By.CSS_SELECTOR, "button.not-a-copy").click()
        WebDriverWait(browser, 20).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.member")) == 2)
        ids = [m.find_elements(By.CSS_SELECTOR, "td")[0].text for m in browser.find_elements(By.CSS_SELECTOR, "tr.member")]
        assert ids == ["r", "m1"], ids
        assert "Decision 1: m2 is not a copy of r." in browser.find_element(By.ID, "decided").text
        shot(browser, "decided")
        log = json.loads(s.call("/decisions"))["decisions"]
        assert [(d["kind"], d["a"], d["b"], d["who"]) for d in log] == [("not_a_copy", "r", "m2", "api")]
    finally:
        s.stop()
    # A rebuild of the clusters from the records obeys the decision.
    subprocess.run([SIMDB, "verify", str(store), "--repair"], check=True, capture_output=True)
    s = Server(store)
    try:
        members = json.loads(s.call("/cluster?id=r"))["members"]
        assert [m["id"] for m in members] == ["r", "m1"], members
        assert json.loads(s.call("/cluster?id=m2"))["size"] == 1
    finally:
        s.stop()


def test_keep_this_one_makes_a_member_the_representative_and_a_rebuild_keeps_it(store, browser):
    s = Server(store)
    rng = random.Random(5)
    text = article(rng)
    s.call("/documents", [{"id": "r", "text": text}, {"id": "m1", "text": text}, {"id": "m2", "text": text}])
    try:
        browser.get(s.base + "/#/cluster?id=r")
        assert wait(browser, "#representative")[0].text == "r"
        members = wait(browser, "tr.member", 3)
        row = next(m for m in members if m.find_elements(By.CSS_SELECTOR, "td")[0].text == "m2")
        row.find_element(By.CSS_SELECTOR, "button.keep").click()
        # The page draws the cluster again after the decision: an element
        # found before the redraw and read after it is stale, so look again.
        WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: [e.text for e in d.find_elements(By.ID, "representative")] == ["m2"])
        ids = [m.find_elements(By.CSS_SELECTOR, "td")[0].text for m in wait(browser, "tr.member", 3)]
        assert ids == ["m2", "r", "m1"], ids
        assert "Decision 1: keep m2." in browser.find_element(By.ID, "decided").text
        assert "kept by decision 1" in browser.find_element(By.ID, "members").text
        shot(browser, "kept")
        log = json.loads(s.call("/decisions"))["decisions"]
        assert [(d["kind"], d["a"], d["who"]) for d in log] == [("keep", "m2", "api")]
    finally:
        s.stop()
    # A rebuild of the clusters from the records keeps it first.
    subprocess.run([SIMDB, "verify", str(store), "--repair"], check=True, capture_output=True)
    s = Server(store)
    try:
        c = json.loads(s.call("/cluster?id=r"))
        assert c["representative"]["id"] == "m2", c
        assert c["representative"]["kept"] == 1, c
    finally:
        s.stop()


def test_texts_that_look_like_html_show_as_text(store, browser):
    s = Server(store)
    try:
        nasty = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>&amp;'
        text = article(random.Random(2)) + "<script>window.__xss=3</script>&lt;b&gt;"
        copy = text + "<b onmouseover=\"window.__xss=4\">x</b>"
        s.call("/documents", [{"id": nasty, "text": text}, {"id": nasty + "-copy", "text": copy}])
        browser.get(s.base + "/#/clusters")
        link = wait(browser, "tr.cluster td a")[0]
        assert link.text == nasty
        browser.get(s.base + "/#/cluster?id=" + urllib.parse.quote(nasty))
        assert wait(browser, "#representative")[0].text == nasty
        assert browser.execute_script("return window.__xss") is None
        assert len(browser.find_elements(By.TAG_NAME, "script")) == 1
        assert not browser.find_elements(By.CSS_SELECTOR, "#view img")
        # Side by side: the texts, and what was added, are text too.
        browser.get(s.base + "/#/cluster?" + urllib.parse.urlencode({"id": nasty, "compare": nasty + "-copy"}))
        added = "".join(e.text for e in wait(browser, "#diff-b ins"))
        assert "<b" in added and "</b>" in added, added
        assert "<script>window.__xss=3</script>" in wait(browser, "#diff-a")[0].text
        assert browser.execute_script("return window.__xss") is None
        assert not browser.find_elements(By.CSS_SELECTOR, "#view b, #view img")
        assert len(browser.find_elements(By.TAG_NAME, "script")) == 1
    finally:
        s.stop()


def test_the_token_is_asked_once_and_kept_for_the_tab(store, browser):
    s = Server(store, token="0123456789abcdef0123456789abcdef")
    try:
        s.call("/documents", [{"id": "x", "text": article(random.Random(3))}])
        browser.get(s.base + "/#/calibration")
        WebDriverWait(browser, 20).until(ec.visibility_of_element_located((By.ID, "token-form")))
        browser.find_element(By.ID, "token").send_keys(s.token)
        browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait(browser, "#similarity-chart")
        shot(browser, "calibration")
        browser.refresh()
        wait(browser, "#similarity-chart")
        assert not browser.find_element(By.ID, "token-form").is_displayed()
    finally:
        s.stop()


def test_other_origins_are_refused(server, browser):
    # The page under another name (DNS rebinding): the service refuses it.
    browser.get(f"http://foreign.test:{server.port}/")
    assert "is not this service's" in browser.page_source
    # A page of another origin calling the API: refused before routing.
    page = (f"<script>fetch('{server.base}/clusters').then(r => document.title = 'answered ' + r.status)"
            ".catch(e => document.title = 'failed')</script>").encode()

    class Foreign(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *a):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Foreign)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://foreign.test:{httpd.server_port}/")
        WebDriverWait(browser, 20).until(lambda d: d.title in ("failed",) or d.title.startswith("answered"))
        assert browser.title == "failed", browser.title
        metrics = server.call("/metrics")
        refused = re.search(r'simdb_requests_refused_total\{reason="origin"\} (\d+)', metrics)
        assert refused and int(refused.group(1)) >= 1, metrics
    finally:
        httpd.shutdown()
