#!/usr/bin/env bash
# Writes the WARC fixtures of tests/web.rs (tests/fixtures/web/), with two
# common writers, from pages this script makes (no text from elsewhere):
#   wget.warc.gz   GNU Wget --warc-file, fetching a local http.server:
#                  two HTML articles (one in GBK), a PNG, a 404, robots.txt
#   warcio.warc.gz warcio's WARCWriter: a chunked and gzip-compressed HTML
#                  response, a request record, a metadata record
# Needs wget, python3 and a Python with warcio (pip install warcio):
#   PYTHON=/path/to/python bash tools/warc_fixtures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/fixtures/web
py=${PYTHON:-python3}
mkdir -p "$out"
site=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$site"' EXIT
"$py" - "$site" <<'EOF'
import sys, os
d = sys.argv[1]
para = "新闻联播今天的主要内容：国务院总理主持召开常务会议，部署进一步做好稳就业工作，会议指出就业是最大的民生。"
page = lambda title, charset, body: f"""<!DOCTYPE html><html><head><meta charset="{charset}"><title>{title}</title>
<script>var nav = "not text";</script></head><body><nav><a href="/">首页</a> <a href="/n">新闻</a></nav>
<article><h1>{title}</h1>{body}</article><footer>版权所有 示例站点</footer></body></html>"""
body = "".join(f"<p>{para}第{i}段。</p>" for i in range(8))
open(os.path.join(d, "a.html"), "w", encoding="utf-8").write(page("稳就业工作部署", "utf-8", body))
open(os.path.join(d, "b.html"), "wb").write(page("稳就业工作部署", "gbk", body).encode("gbk"))
open(os.path.join(d, "logo.png"), "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(64))
EOF
port=$(( 20000 + RANDOM % 20000 ))
(cd "$site" && exec "$py" -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && break; sleep 0.1; done
rm -f "$out/wget.warc.gz"
(cd "$site" && wget -q --warc-file=wget --no-warc-keep-log -O /dev/null \
    "http://127.0.0.1:$port/a.html" "http://127.0.0.1:$port/b.html" \
    "http://127.0.0.1:$port/logo.png" "http://127.0.0.1:$port/missing.html" || true)
cp "$site/wget.warc.gz" "$out/wget.warc.gz"
"$py" - "$out/warcio.warc.gz" <<'EOF'
import gzip, io, sys
from warcio.warcwriter import WARCWriter
from warcio.statusandheaders import StatusAndHeaders
html = ("<html><head><title>压缩的页面</title></head><body><div class='nav'>首页 新闻</div><article>"
        + "".join(f"<p>分块传输并经过压缩的网页正文，第{i}段，用来检验解码是否正确。</p>" for i in range(10))
        + "</article></body></html>").encode("utf-8")
gz = gzip.compress(html, mtime=0)
chunked = b"".join(b"%x\r\n%s\r\n" % (len(gz[i:i+100]), gz[i:i+100]) for i in range(0, len(gz), 100)) + b"0\r\n\r\n"
with open(sys.argv[1], "wb") as f:
    w = WARCWriter(f, gzip=True)
    req = StatusAndHeaders("GET /z.html HTTP/1.1", [("Host", "example.test")], is_http_request=True)
    w.write_record(w.create_warc_record("http://example.test/z.html", "request", payload=io.BytesIO(b""),
                   http_headers=req, warc_headers_dict={"WARC-Date": "2026-11-20T08:00:00Z"}))
    hdrs = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                            ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")], protocol="HTTP/1.1")
    w.write_record(w.create_warc_record("http://example.test/z.html", "response", payload=io.BytesIO(chunked),
                   http_headers=hdrs, warc_headers_dict={"WARC-Date": "2026-11-20T08:00:01Z"}))
    w.write_record(w.create_warc_record("http://example.test/z.html", "metadata",
                   payload=io.BytesIO(b"outlinks: 0\n"), warc_content_type="application/warc-fields",
                   warc_headers_dict={"WARC-Date": "2026-11-20T08:00:02Z"}))
EOF
ls -l "$out"
