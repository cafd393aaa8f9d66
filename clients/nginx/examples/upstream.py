"""An upstream to try the example nginx.conf with: answers every GET with 200 and a JSON body
naming its path, `{"path": "/hello"}` (docs/nginx.md's transcript). Standard library only.

    python3 clients/nginx/examples/upstream.py 8080
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps NGINX's upstream connections open

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
