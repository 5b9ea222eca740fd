# early_requests.py PORT N SIZE WAIT: N connections to 127.0.0.1:PORT each
# send a whole POST of SIZE body bytes at once, then after WAIT seconds
# each is read to its end; one line per connection: the status line
# ("-" none), how the read ended (eof, or the error: a reset), the bytes.
import socket, sys, time

port, n, size, wait = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
       b"Authorization: Bearer sk-real\r\nContent-Length: %d\r\n\r\n" % size) + b"a" * size
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    socks.append(s)
time.sleep(wait)
for s in socks:
    s.settimeout(10)
    got, end = b"", "eof"
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except OSError as e:
        end = type(e).__name__
    print(got.split(b"\r\n")[0].decode(errors="replace") or "-", end, len(got))
