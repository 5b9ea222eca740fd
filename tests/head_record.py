#!/usr/bin/env python3
"""head_record.py PORTFILE LOG: a fake upstream for tests/t_headbytes.sh.

It appends every request it gets, head and body, byte for byte to LOG (so a
test can pin the exact bytes kilovolt sends upstream) and answers with a
fixed response head picked by the request's x-shape header, whose odd header
case, hop-by-hop headers and framing make kilovolt's response-head rewrite
show in what the client gets. Listens on 127.0.0.1 only, an ephemeral port
written to PORTFILE; keep-alive, one thread per connection."""
import socket
import sys
import threading

BODY = (b'{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini",'
        b'"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},'
        b'"finish_reason":"stop"}],"usage":{"prompt_tokens":10,'
        b'"completion_tokens":5,"total_tokens":15}}')
ABODY = (b'{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4",'
         b'"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",'
         b'"usage":{"input_tokens":10,"output_tokens":5}}')


def chunked(b):
    return b'%x\r\n' % len(b) + b + b'\r\n0\r\n\r\n'


def answer(shape, method):
    if shape == b'chunked':
        head = (b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n'
                b'Transfer-Encoding: chunked\r\nX-Trace: a, b\r\n\r\n')
        return head + (b'' if method == b'HEAD' else chunked(BODY))
    if shape == b'anthropic':
        return (b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
                b'Content-Length: %d\r\nrequest-id: req_a\r\n'
                b'anthropic-ratelimit-requests-limit: 50\r\n\r\n' % len(ABODY)) + ABODY
    if shape == b'models':
        b = b'{"object":"list","data":[]}'
        return (b'HTTP/1.1 200 Fine\r\nContent-Type: application/json\r\n'
                b'Content-Length: %d\r\nCache-Control: no-store\r\n\r\n' % len(b)) + \
            (b'' if method == b'HEAD' else b)
    # plain: odd case, hop-by-hop headers (Keep-Alive, one Connection names),
    # a provider's CORS header (replaced when kilovolt answers CORS itself)
    return (b'HTTP/1.1 200 OK\r\nCONTENT-TYPE:application/json  \r\n'
            b'content-length: %d\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive, X-Hop\r\n'
            b'X-Hop: gone\r\nx-request-id: req_mock\r\n'
            b'Access-Control-Allow-Origin: *\r\nopenai-processing-ms:  7\r\n\r\n'
            % len(BODY)) + (b'' if method == b'HEAD' else BODY)


def serve(conn, log, lock):
    buf = b''
    with conn:
        while True:
            while b'\r\n\r\n' not in buf:
                d = conn.recv(65536)
                if not d:
                    return
                buf += d
            hl = buf.index(b'\r\n\r\n') + 4
            head = buf[:hl]
            clen = 0
            shape = b'plain'
            for line in head.split(b'\r\n')[1:]:
                name, _, value = line.partition(b':')
                if name.lower() == b'content-length':
                    clen = int(value.strip())
                if name.lower() == b'x-shape':
                    shape = value.strip()
            while len(buf) < hl + clen:
                d = conn.recv(65536)
                if not d:
                    return
                buf += d
            with lock:
                log.write(buf[:hl + clen] + b'\n----\n')
                log.flush()
            buf = buf[hl + clen:]
            conn.sendall(answer(shape, head.split(b' ', 1)[0]))


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', 0))
    s.listen(16)
    with open(sys.argv[1] + '.tmp', 'w') as f:
        f.write('%d\n' % s.getsockname()[1])
    import os
    os.rename(sys.argv[1] + '.tmp', sys.argv[1])
    log = open(sys.argv[2], 'ab')
    lock = threading.Lock()
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, log, lock), daemon=True).start()


main()
