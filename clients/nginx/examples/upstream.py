"""An upstream to try the example nginx.conf and login.conf with: answers every GET with 200 and
a JSON body naming its path, `{"path": "/hello"}`, and a login (`POST /login`, a form with
`account` and `password`) with 200 `{"account": "alice"}` for alice's password, else 401
(docs/nginx.md's transcripts). Standard library only.

    python3 clients/nginx/examples/upstream.py 8080
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

PASSWORDS = {"alice": "correct horse battery staple"}  # a login's accounts


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps NGINX's upstream connections open

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.answer(200, {"path": self.path})

    def do_POST(self) -> None:  # noqa: N802
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
        account, password = (form.get(f, [""])[0] for f in ("account", "password"))
        if self.path != "/login":
            self.answer(404, {"error": "not found"})
        elif account in PASSWORDS and PASSWORDS[account] == password:
            self.answer(200, {"account": account})
        else:
            self.answer(401, {"error": "wrong account or password"})

    def answer(self, status: int, content: dict) -> None:
        body = json.dumps(content).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
