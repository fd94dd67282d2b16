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


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def fields(buf):
    """(field number, value) of each length-delimited field of a message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        wire = key & 7
        if wire == 0:
            _, i = varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = varint(buf, i)
            yield key >> 3, buf[i:i + n]
            i += n
        else:
            raise ValueError("wire type %d" % wire)


def count_protobuf(body):
    """Spans in an ExportTraceServiceRequest: resource_spans(1) >
    scope_spans(2) > spans(2)."""
    n = 0
    for f, rs in fields(body):
        if f != 1:
            continue
        for g, ss in fields(rs):
            if g == 2:
                n += sum(1 for h, _ in fields(ss) if h == 2)
    return n


class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        global spans
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        kind = self.headers.get("Content-Type", "")
        try:
            if kind.startswith("application/x-protobuf"):
                n = count_protobuf(body)
            elif body.startswith(b'{"resourceSpans"'):
                # Counted, not parsed: the sink shares the machine with eco.
                n = body.count(b'"spanId"')
            else:
                raise ValueError("not OTLP")
        except (ValueError, IndexError):
            self.send_response(400)
            self.end_headers()
            return
        spans += n
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
