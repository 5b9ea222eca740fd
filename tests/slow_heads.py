# slow_heads.py PORT N BYTES SECS OUT: N connections to 127.0.0.1:PORT, each
# sending BYTES of a request head that never ends, held for SECS seconds;
# OUT gets "opened=N refused=R closed=C open=O" (refused: never connected
# or closed before all its bytes went out; closed: by the peer later).
import errno, selectors, socket, sys, time

port, n, nbytes, secs, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4]), sys.argv[5]
head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nX-Pad: "
head += b"p" * (nbytes - len(head))
sel = selectors.DefaultSelector()
left, opened, refused, closed = {}, 0, 0, 0
end = time.time() + secs
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    r = s.connect_ex(("127.0.0.1", port))
    if r not in (0, errno.EINPROGRESS):
        refused += 1
        s.close()
        continue
    left[s] = head
    sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ)
    opened += 1
while time.time() < end and sel.get_map():
    for key, ev in sel.select(0.2):
        s = key.fileobj
        gone = False
        if ev & selectors.EVENT_READ:
            try:
                gone = s.recv(4096) == b"" or True	# any answer (a 503) ends it
            except OSError:
                gone = True
        if not gone and ev & selectors.EVENT_WRITE and left.get(s):
            try:
                k = s.send(left[s])
                left[s] = left[s][k:]
            except BlockingIOError:
                pass
            except OSError:
                gone = True
            if not gone and not left[s]:
                sel.modify(s, selectors.EVENT_READ)
        if gone:
            if left.get(s):
                refused += 1
            else:
                closed += 1
            sel.unregister(s)
            s.close()
open(out, "w").write("opened=%d refused=%d closed=%d open=%d\n" %
                     (opened, refused, closed, len(sel.get_map())))
