#!/usr/bin/env python3
"""Loopback HTTP server for bench/web_fetch.sh.

GET /page.html  serves the file given as the first argument (text/html; charset=utf-8).
GET /huge       streams SIZE bytes of text/plain (second argument, default 100 MB) in 64 KiB
                writes and records how many bytes were written before the client hung up.
GET /stats      the byte count of the last /huge as JSON.
Prints the port on stdout, then serves until killed.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = open(sys.argv[1], "rb").read()
HUGE = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000_000
STATS = {"huge_sent": 0, "huge_complete": False}
BLOCK = (b"0123456789abcdef" * 4096)  # 64 KiB


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/page.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)
        elif self.path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(HUGE))
            self.end_headers()
            sent = 0
            STATS["huge_complete"] = False
            try:
                while sent < HUGE:
                    n = min(len(BLOCK), HUGE - sent)
                    self.wfile.write(BLOCK[:n])
                    sent += n
                    STATS["huge_sent"] = sent
                STATS["huge_complete"] = True
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
        elif self.path == "/stats":
            body = json.dumps(STATS).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
