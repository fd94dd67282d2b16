#!/usr/bin/env python3
"""An OTLP/HTTP endpoint that accepts and discards spans, for measuring
eco's tracing overhead without a Jaeger (bench/api, docs/performance.md).
Prints the number of spans received when stopped (Ctrl-C / SIGTERM).

    bench/api/otlp_sink.py 4318 &
    eco serve --otlp-endpoint http://127.0.0.1:4318
"""
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

spans = 0


class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        global spans
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not body.startswith(b'{"resourceSpans"'):
            self.send_response(400)
            self.end_headers()
            return
        # Counted, not parsed: the sink shares the machine with eco.
        spans += body.count(b'"spanId"')
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 4318
    server = ThreadingHTTPServer(("127.0.0.1", port), Sink)

    def stop(*_):
        print(f"otlp_sink: {spans} spans received", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
